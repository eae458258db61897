"""Cache keys follow content, not run ids or paths, and die with the cache directory."""
from __future__ import annotations

import shutil
from types import SimpleNamespace

from prefect import task

from specops.sources.base import ModelArtifact
from tasks.caching import ContentKey, canonical


def ctx():
    @task
    def some_task(x):  # the policy reads the task's name and source
        return x

    return SimpleNamespace(task=some_task)


def key(policy, cache_dir, **inputs):
    return policy.compute_key(ctx(), {"cache_dir": cache_dir, **inputs}, {})


def test_key_follows_model_content_not_path(tmp_path):
    policy = ContentKey(recipe="1")
    a = ModelArtifact(tmp_path / "a", "embedded:x", "sha-1")
    moved = ModelArtifact(tmp_path / "b", "embedded:x", "sha-1")
    changed = ModelArtifact(tmp_path / "a", "embedded:x", "sha-2")
    assert key(policy, tmp_path, m=a) == key(policy, tmp_path, m=moved)
    assert key(policy, tmp_path, m=a) != key(policy, tmp_path, m=changed)


def test_recipe_version_and_cache_generation_change_the_key(tmp_path):
    k1 = key(ContentKey(recipe="1"), tmp_path / "c", x=1)
    assert k1 != key(ContentKey(recipe="2"), tmp_path / "c", x=1)
    assert k1 == key(ContentKey(recipe="1"), tmp_path / "c", x=1)
    shutil.rmtree(tmp_path / "c")  # a deleted cache must not hand back dead paths
    assert k1 != key(ContentKey(recipe="1"), tmp_path / "c", x=1)


def test_sets_hash_in_a_stable_order():
    assert canonical({"s": {"b", "a", "c"}}) == {"s": ["a", "b", "c"]}


def test_concurrent_first_runs_agree_on_one_cache_generation(tmp_path):
    from concurrent.futures import ProcessPoolExecutor

    from tasks.caching import cache_generation

    with ProcessPoolExecutor(4) as pool:
        tokens = set(pool.map(cache_generation, [tmp_path / "c"] * 16))
    assert len(tokens) == 1
    assert not [p.name for p in (tmp_path / "c").iterdir() if p.name.endswith(".tmp")]


def dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_lock_held_by_a_dead_process_of_this_host_is_broken_not_waited_on(tmp_path):
    import json
    import os
    import socket

    import psutil

    from tasks.caching import CacheLockManager, holder_gone

    host = socket.gethostname()
    assert holder_gone(f"{host}:{dead_pid()}:1:MainThread")
    assert not holder_gone(f"{host}:{os.getpid()}:1:MainThread")
    assert not holder_gone(f"another-host:{dead_pid()}:1:MainThread")  # not ours to judge
    me = f"{host}:{os.getpid()}:1:MainThread"
    assert holder_gone(me, locked_at=psutil.Process().create_time() - 60)  # our pid, reused after the lock
    assert not holder_gone(me, locked_at=psutil.Process().create_time() + 5)

    manager = CacheLockManager(tmp_path / "locks")
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "k.lock").write_text(json.dumps({"holder": f"{host}:{dead_pid()}:1:M", "expiration": None}))
    assert manager.acquire_lock("k", "me", acquire_timeout=5)  # without the check: False after 5 s
    assert manager.is_lock_holder("k", "me")
    live = CacheLockManager(tmp_path / "locks")
    assert not live.acquire_lock("k", "someone-else", acquire_timeout=0.3)  # a live holder still counts


def test_a_lock_file_not_yet_written_by_its_holder_counts_as_held(tmp_path):
    from tasks.caching import CacheLockManager

    (tmp_path / "k.lock").touch()  # FileSystemLockManager creates it, then writes the holder
    assert CacheLockManager(tmp_path).is_locked("k")  # Prefect's own raises on the empty file


def test_the_lock_directory_follows_the_cache_the_run_uses(tmp_path, monkeypatch):
    from tasks.caching import LOCKS, CacheLockManager

    manager = CacheLockManager()
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "one"))
    assert manager.lock_files_directory == (tmp_path / "one" / LOCKS).resolve()
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "two"))
    assert manager._lock_path_for_key("abc") == (tmp_path / "two" / LOCKS / "abc.lock").resolve()


def test_cached_tasks_compute_each_key_once_across_concurrent_runs(tmp_path):
    """Two runs (threads: Prefect's lock holder is host:pid:thread) open the task's transaction
    on one key at once: the second waits for the first's commit and reads its record."""
    import threading
    import time

    from prefect.filesystems import LocalFileSystem
    from prefect.results import ResultStore
    from prefect.transactions import IsolationLevel, transaction

    from tasks.models import download_model
    from tasks.render import build_engine, render_repository

    for t in (download_model, build_engine, render_repository):
        assert IsolationLevel(t.cache_policy.isolation_level) is IsolationLevel.SERIALIZABLE, t.name
    policy = download_model.cache_policy
    lock_manager = policy.lock_manager.__class__(tmp_path / "locks")
    computed, got = [], []

    def run(name: str) -> None:
        store = ResultStore(result_storage=LocalFileSystem(basepath=str(tmp_path / "results")),
                            lock_manager=lock_manager)
        with transaction(key="same-key", store=store, isolation_level=IsolationLevel(policy.isolation_level)) as txn:
            if txn.is_committed():
                got.append((name, txn.read().result))
                return
            computed.append(name)
            time.sleep(0.5)  # the other run arrives while this one computes
            txn.stage(f"converted by {name}")
            got.append((name, f"converted by {name}"))

    threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(computed) == 1
    assert {value for _, value in got} == {f"converted by {computed[0]}"}

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


# A run holding a cache key's lock, in a process of its own: prints "locked", then holds it.
HOLDER = """
import sys, time
from pathlib import Path
from prefect.filesystems import LocalFileSystem
from prefect.results import ResultStore
from prefect.transactions import IsolationLevel, transaction
from tasks.caching import CacheLockManager

work = Path(sys.argv[1])
if sys.argv[2] == "transaction":  # as a cached task takes it: Prefect names the holder by a uuid
    store = ResultStore(result_storage=LocalFileSystem(basepath=str(work / "results")),
                        lock_manager=CacheLockManager(work / "locks"))
    with transaction(key="k", store=store, isolation_level=IsolationLevel.SERIALIZABLE):
        print("locked", flush=True)
        time.sleep(120)
elif sys.argv[2] == "fork":  # forks a child that outlives it (a data loader's worker), then holds
    import os
    assert CacheLockManager(work / "locks").acquire_lock("k", "parent")
    child = os.fork()
    if child == 0:
        time.sleep(120)
        os._exit(0)
    print(os.getpid(), flush=True)
    print(child, flush=True)
    print("locked", flush=True)
    time.sleep(120)
else:  # named as Prefect's default holder names a process (host:pid:thread), then exits holding it
    import os, socket
    assert CacheLockManager(work / "locks").acquire_lock("k", f"{socket.gethostname()}:{os.getpid()}:1:MainThread")
    print("locked", flush=True)
"""


def start_holder(work, how):
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(work), how], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).parents[3])
    assert proc.stdout.readline().strip() == "locked"
    return proc


def until_zombie(proc):
    import time

    import psutil

    for _ in range(600):  # a bound, not a timing assertion: an exited child turns zombie at once
        if psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE:
            return
        time.sleep(0.05)
    raise AssertionError(f"holder {proc.pid} did not exit")


def test_a_killed_runs_lock_is_free_at_once(tmp_path):
    """A run killed inside a cached task's transaction never blocks the next run of the key."""
    import signal

    from tasks.caching import CacheLockManager

    proc = start_holder(tmp_path, "transaction")
    try:
        manager = CacheLockManager(tmp_path / "locks")
        assert manager.is_locked("k")
        assert not manager.acquire_lock("k", "me", acquire_timeout=0.3)  # a live holder counts
        proc.send_signal(signal.SIGKILL)
        until_zombie(proc)  # not reaped, as by a PID 1 that reaps no orphans
        # A lock file naming its holder by uuid says nothing about the process: no liveness check can
        # judge it, so the old manager waited out the timeout (False).
        assert manager.acquire_lock("k", "me", acquire_timeout=10)
        assert manager.is_lock_holder("k", "me")
    finally:
        proc.kill()
        proc.wait()


def test_a_lock_whose_holder_exited_unreaped_is_free(tmp_path):
    """A holder that exited and is a zombie (dead, not yet reaped) no longer holds its lock."""
    from tasks.caching import CacheLockManager

    proc = start_holder(tmp_path, "exit")
    try:
        until_zombie(proc)
        # Its lock file still names it as a live pid of this host: psutil calls a zombie running.
        assert CacheLockManager(tmp_path / "locks").acquire_lock("k", "me", acquire_timeout=10)
    finally:
        proc.wait()


# Runs the holder under a child subreaper (prctl PR_SET_CHILD_SUBREAPER), which reaps it and the child
# it forks once they die: this host's init reaps no orphans.
REAPER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]])
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
"""


def test_a_child_forked_under_the_lock_does_not_keep_it_after_its_parent_is_killed(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from tasks.caching import CacheLockManager

    reaper = subprocess.Popen([sys.executable, "-c", REAPER, HOLDER, str(tmp_path), "fork"], stdout=subprocess.PIPE,
                              text=True, cwd=Path(__file__).parents[3])
    pids = [int(reaper.stdout.readline()) for _ in range(2)]  # the holder, the child it forked
    try:
        assert reaper.stdout.readline().strip() == "locked"
        manager = CacheLockManager(tmp_path / "locks")
        assert manager.is_locked("k")  # the parent's descriptor holds it
        os.kill(pids[0], signal.SIGKILL)
        os.kill(pids[1], 0)  # the child lives on (raises if it is gone)
        # Without the child closing its copy at fork, the lock would be held until the child ends.
        assert manager.acquire_lock("k", "me", acquire_timeout=10)
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        reaper.wait(timeout=60)


def test_waiters_that_find_a_dead_runs_lock_take_it_one_at_a_time(tmp_path):
    """Many waiters see one dead run's lock file at once; at any moment at most one holds the key.
    (Breaking a stale lock by reading it, then deleting it by path, let a slow waiter delete the
    lock a fast one had just taken, and both held it.)"""
    import json
    import os
    import socket
    import sys
    import threading
    import time

    from tasks.caching import CacheLockManager

    host = socket.gethostname()
    locks = tmp_path / "locks"
    locks.mkdir()
    dead = {"holder": f"{host}:{dead_pid()}:1:MainThread", "expiration": None}  # as a killed run left it
    inside, most, errors = [0], [0], []
    count = threading.Lock()

    def waiter(i: int, barrier: threading.Barrier) -> None:
        manager, name = CacheLockManager(locks), f"{host}:{os.getpid()}:{i}:waiter-{i}"
        barrier.wait()
        try:
            assert manager.acquire_lock("k", name, acquire_timeout=30)
            with count:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.005)
            with count:
                inside[0] -= 1
            manager.release_lock("k", name)
        except BaseException as err:  # noqa: BLE001 - reported below, with the others
            errors.append(repr(err))

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave the waiters as finely as separate processes would be
    try:
        for _ in range(10):
            (locks / "k.lock").write_text(json.dumps(dead))
            barrier = threading.Barrier(4)
            threads = [threading.Thread(target=waiter, args=(i, barrier)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
    finally:
        sys.setswitchinterval(switch)
    assert (most[0], errors) == (1, [])


def test_a_lock_is_held_until_released_and_only_by_its_holder(tmp_path):
    import anyio
    import pytest

    from tasks.caching import CacheLockManager

    manager, other = CacheLockManager(tmp_path / "locks"), CacheLockManager(tmp_path / "locks")
    assert manager.acquire_lock("k", "me", acquire_timeout=0)
    assert manager.acquire_lock("k", "me", acquire_timeout=0)  # re-entrant, as Prefect's
    assert other.is_locked("k") and other.is_lock_holder("k", "me") and not other.is_lock_holder("k", "you")
    assert not other.acquire_lock("k", "you", acquire_timeout=0.3)  # another thread of this process waits
    assert not anyio.run(other.aacquire_lock, "k", "you", 0.3)
    assert not other.wait_for_lock("k", timeout=0.3)
    with pytest.raises(ValueError, match="No lock held by you"):
        other.release_lock("k", "you")
    manager.release_lock("k", "me")
    assert not (tmp_path / "locks" / "k.lock").exists()  # released locks leave no files behind
    assert not other.is_locked("k") and other.wait_for_lock("k", timeout=0)
    with pytest.raises(ValueError, match="No lock for transaction"):
        manager.release_lock("k", "me")
    assert anyio.run(other.aacquire_lock, "k", "you", 0)
    other.release_lock("k", "you")


def test_a_lock_file_nobody_holds_is_free_and_a_holder_not_yet_named_holds(tmp_path):
    from tasks.caching import CacheLockManager, _describe_holder

    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "k.lock").write_text("")  # left by a run that died before it wrote its name
    manager = CacheLockManager(locks)
    assert not manager.is_locked("k")  # Prefect's own raises on the empty file
    assert manager.acquire_lock("k", "me", acquire_timeout=0)
    (locks / "k.lock").write_text("")  # as between taking the lock and writing the holder
    assert CacheLockManager(locks).is_locked("k")
    assert _describe_holder(locks / "k.lock") == "a process that has not recorded its name yet"
    manager.release_lock("k", "me")


def test_a_wait_says_whom_it_waits_for_when_it_starts_and_while_it_lasts(tmp_path, monkeypatch, caplog):
    import logging
    import os
    import socket
    import threading

    from tasks import caching
    from tasks.caching import CacheLockManager

    monkeypatch.setattr(caching, "WAIT_LOG_EVERY_S", 0.2)  # a minute in a run
    caplog.set_level(logging.INFO, logger="specops.cache")
    holder = CacheLockManager(tmp_path / "locks")
    assert holder.acquire_lock("abcdef0123456789", "first", acquire_timeout=0)
    logged_twice = threading.Event()

    class Seen(logging.Handler):
        def emit(self, record):
            if sum("waiting" in r.getMessage() for r in caplog.records) >= 2:
                logged_twice.set()

    seen = Seen()
    logging.getLogger("specops.cache").addHandler(seen)
    got = []
    try:
        waiter = threading.Thread(target=lambda: got.append(
            CacheLockManager(tmp_path / "locks").acquire_lock("abcdef0123456789", "second")))
        waiter.start()
        assert logged_twice.wait(timeout=60)
        holder.release_lock("abcdef0123456789", "first")
        waiter.join(timeout=60)
    finally:
        logging.getLogger("specops.cache").removeHandler(seen)
    assert got == [True]
    messages = [r.getMessage() for r in caplog.records if r.name == "specops.cache"]
    assert messages[0].startswith("waiting for cache key abcdef012345: ")
    assert f"pid {os.getpid()} on {socket.gethostname()} (since " in messages[0]
    assert messages[1].startswith("still waiting after ")
    assert messages[-1].startswith("cache key abcdef012345: lock free after ")


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

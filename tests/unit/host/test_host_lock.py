"""The host lock with real processes: a second holder waits and names the first, a SIGKILLed holder
releases it at once, a nested hold does not wait on itself, and the default directory is shared."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specops.host import host_lock
from specops.host.host_lock import LOCK_DIR_ENV, hold_host_locks, holder_of, lock_dir

HOLD = """
import sys, time
from specops.host.host_lock import hold_host_locks
with hold_host_locks(sys.argv[1].split(","), sys.argv[2], print) as waited:
    print(f"held after {waited:.2f}s", flush=True)
    time.sleep(float(sys.argv[3]))
print("released", flush=True)
"""
REPO = Path(__file__).resolve().parents[3]


def holder(names: str, who: str, hold_s: float, env: dict) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, names, who, str(hold_s)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("held after"), proc.poll()
    return proc


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict:
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))
    return dict(os.environ)


def test_a_second_run_waits_for_the_first_and_names_it(env):
    first = holder("cpu:h", "ngram-local run first", 1.5, env)
    said: list[str] = []
    start = time.monotonic()
    with hold_host_locks(["cpu:h"], "ngram-local run second", said.append) as waited:
        assert first.poll() is not None or first.stdout.readline() == "released\n"  # it let go before we held
        assert holder_of("cpu:h").startswith("ngram-local run second (pid ")
    assert waited >= 1.0 and time.monotonic() - start >= 1.0
    assert len(said) == 1 and "waiting for the host lock cpu:h" in said[0]
    assert f"held by ngram-local run first (pid {first.pid}, since " in said[0], said
    assert first.wait(timeout=10) == 0
    assert holder_of("cpu:h") == "unknown"  # released: no stale name for the next waiter


def test_a_sigkilled_holder_releases_the_lock_at_once(env):
    first = holder("cpu:h", "killed run", 600, env)
    first.kill()
    first.wait()
    said: list[str] = []
    with hold_host_locks(["cpu:h"], "next", said.append) as waited:
        assert waited < 1.0 and said == []


def test_other_slots_do_not_wait_and_a_nested_hold_does_not_wait_on_itself(env):
    other = holder("gpu:h:GPU-1", "run on GPU 1", 600, env)
    try:
        said: list[str] = []
        with hold_host_locks(["gpu:h:GPU-0"], "run on GPU 0", said.append) as waited:
            with hold_host_locks(["gpu:h:GPU-0"], "a nested step", said.append) as nested:
                assert waited < 1.0 and nested < 1.0 and said == []
            # the nested step's end did not release the outer hold
            assert json.loads(host_lock.lock_path("gpu:h:GPU-0").read_text())["who"] == "run on GPU 0"
    finally:
        other.kill()
        other.wait()


def test_the_default_directory_is_shared_by_every_user_and_has_a_fallback(monkeypatch, tmp_path):
    monkeypatch.delenv(LOCK_DIR_ENV)
    shared, fallback = tmp_path / "run-lock" / "specops", tmp_path / "tmp-locks"
    monkeypatch.setattr(host_lock, "DEFAULT_DIRS", (shared, fallback))
    assert lock_dir() == shared and shared.stat().st_mode & 0o7777 == 0o1777
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")  # no /run/lock on this host: the directory cannot be made
    monkeypatch.setattr(host_lock, "DEFAULT_DIRS", (blocked / "specops", fallback))
    assert lock_dir() == fallback and fallback.stat().st_mode & 0o7777 == 0o1777


QUEUED = """
import sys, time
from pathlib import Path
from specops.host.host_lock import hold_host_locks
with hold_host_locks(["cpu:h"], sys.argv[1], lambda line: print(line, flush=True)):
    with open(sys.argv[2], "a") as f:
        f.write(sys.argv[1] + "\\n")
    time.sleep(0.3)
"""


def test_waiting_runs_take_the_lock_in_the_order_they_arrived(env, tmp_path):
    first = holder("cpu:h", "holder", 4, env)
    order = tmp_path / "order.txt"
    waiters = []
    for name in ("second", "third", "fourth"):
        waiters.append(subprocess.Popen([sys.executable, "-c", QUEUED, name, str(order)], cwd=REPO, env=env,
                                        stdout=subprocess.PIPE, text=True))
        line = waiters[-1].stdout.readline()  # it queued and said so before the next one starts
        assert "waiting for the host lock cpu:h" in line and "in arrival order" in line, line
    for waiter in waiters:
        assert waiter.wait(timeout=60) == 0
    assert first.wait(timeout=10) == 0
    assert order.read_text().split() == ["second", "third", "fourth"]


def test_a_dead_waiters_ticket_does_not_hold_the_queue(env):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    queue = host_lock.lock_path("cpu:h").with_suffix(".queue")  # beside the lock file
    queue.mkdir(parents=True)
    (queue / f"{1:020d}-{gone.pid}").touch()  # arrived long ago, killed while waiting
    with hold_host_locks(["cpu:h"], "next", print) as waited:
        assert waited < 1.0
    assert list(queue.iterdir()) == []  # its ticket removed, ours too


def test_locks_are_taken_in_one_order_whatever_order_they_are_asked_in(env, monkeypatch):
    """Two runs wanting GPUs 0 and 1, asked as [1, 0] and [0, 1], must take them in the same order, or each can hold
    one and wait for the other forever."""
    claimed: list[str] = []
    claim = host_lock._claim
    monkeypatch.setattr(host_lock, "_claim", lambda fh, who: (claimed.append(Path(fh.name).stem), claim(fh, who)))
    for asked in (["gpu:h:GPU-1", "gpu:h:GPU-0", "cpu:h"], ["cpu:h", "gpu:h:GPU-0", "gpu:h:GPU-1"]):
        claimed.clear()
        with hold_host_locks(asked, "a run", print):
            pass
        assert claimed == ["cpu:h", "gpu:h:GPU-0", "gpu:h:GPU-1"], (asked, claimed)

"""One benchmark per host, whoever starts it: a file lock per slot, beside the Prefect slots.

The Prefect slots (prefect_adapters/slot_limits.py) order the runs of one Prefect API. `specops run`
talks to a private API server of its own, so a CLI run and a worker's run of the same host never
saw each other's slot, and both measured on the same two cores (0.70x and 0.74x, against 1.50x
alone) into the regression baselines. An flock(2) on a file in a directory every user of the host
shares orders them all. The kernel drops it when its holder dies, however it dies, so a killed
run leaves no stale lock. The holder writes who it is into the file, so a waiting run can say
whom it waits for.
"""
from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import IO

from specops.settings import env_name, settings

LOCK_DIR_ENV = env_name("specops_lock_dir")
# /run/lock is the FHS place for locks, world-writable and sticky, and shared by services that
# get a private /tmp (systemd's PrivateTmp, which a worker unit may well set).
DEFAULT_DIRS = (Path("/run/lock/specops"), Path("/tmp/specops-locks"))
POLL_S = 0.2
REPORT_EVERY_S = 60.0  # a waiting run says again whom it waits for (the holder may change)

_held: dict[str, int] = {}  # lock name -> depth, in this process: a nested hold must not wait on itself


def lock_dir() -> Path:
    """SPECOPS_LOCK_DIR, else the first default directory that can be made writable by every user."""
    if configured := settings().specops_lock_dir:
        configured.mkdir(parents=True, exist_ok=True)
        return configured
    for path in DEFAULT_DIRS:
        try:
            path.mkdir(parents=True, exist_ok=True)
            if path.stat().st_uid == os.getuid():
                path.chmod(0o1777)  # every user's runs share it; the sticky bit keeps their files theirs
            if os.access(path, os.W_OK):
                return path
        except OSError:
            continue
    raise PermissionError(f"no writable lock directory among {', '.join(map(str, DEFAULT_DIRS))}; "
                          f"set {LOCK_DIR_ENV}")


def lock_path(name: str) -> Path:
    return lock_dir() / f"{name.replace('/', '-')}.lock"


def holder_of(name: str) -> str:
    """Who holds the lock `name`, as its holder wrote it ("unknown" when it has not yet)."""
    try:
        info = json.loads(lock_path(name).read_text() or "{}")
    except (OSError, ValueError):
        info = {}
    if not info:
        return "unknown"
    since = time.strftime("%H:%M:%S", time.localtime(info.get("since", 0)))
    return f"{info.get('who', '?')} (pid {info.get('pid', '?')}, since {since})"


def _open(name: str) -> IO[str]:
    path = lock_path(name)
    fh = open(path, "a+")  # noqa: SIM115 -- closed by _release, or by the caller when the wait fails
    with suppress(OSError):  # not ours: its owner set the mode
        os.chmod(path, 0o666)  # another user's run must be able to open it to wait
    return fh


def _try(fh: IO[str]) -> bool:
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _claim(fh: IO[str], who: str) -> None:
    fh.seek(0)
    fh.truncate()
    fh.write(json.dumps({"who": who, "pid": os.getpid(), "since": time.time()}))
    fh.flush()


def _release(name: str, fh: IO[str] | None) -> None:
    _held[name] -= 1
    if fh is None:  # a nested hold: the outer one releases
        return
    del _held[name]
    fh.seek(0)
    fh.truncate()  # no stale name for the next waiter to print
    fh.flush()
    fcntl.flock(fh, fcntl.LOCK_UN)
    fh.close()


def _wait(fh: IO[str], name: str, on_wait: Callable[[str], None]) -> None:
    said = None
    while not _try(fh):
        if said is None or time.monotonic() - said >= REPORT_EVERY_S:
            on_wait(f"waiting for the host lock {name} (one benchmark per host, whoever starts it; "
                    f"{lock_path(name)}): held by {holder_of(name)}")
            said = time.monotonic()
        time.sleep(POLL_S)


@contextmanager
def hold_host_locks(names: list[str], who: str, on_wait: Callable[[str], None]) -> Iterator[float]:
    """Hold every lock in `names` for the duration, waiting as long as another process holds one;
    yields the seconds waited. `on_wait` gets a line naming the holder when the wait starts and
    every REPORT_EVERY_S after. Taken in sorted order, so two runs wanting two GPUs cannot deadlock."""
    start = time.monotonic()
    with ExitStack() as stack:
        for name in sorted(set(names)):
            if name in _held:  # this process holds it already (a nested step)
                _held[name] += 1
                stack.callback(_release, name, None)
                continue
            fh = _open(name)
            try:
                _wait(fh, name, on_wait)
            except BaseException:  # cancelled while waiting: nothing held
                fh.close()
                raise
            _claim(fh, who)
            _held[name] = 1
            stack.callback(_release, name, fh)
        yield time.monotonic() - start

"""Concurrent runs make a store entry once.

A step looks its entry up itself (produce_once), so no record elsewhere can point into the store, and
deleting the cache directory just means every entry is made again. The producer holds an flock(2) on the
entry's lock file, which the kernel drops when the holder's process ends, however it ends; the lock file
names the holder for whoever waits.
"""
from __future__ import annotations

import fcntl
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Generic, TypeVar

LOG = logging.getLogger("specops.cache")  # forwarded to the flow run's logs (prefect_adapters/step.py)
T = TypeVar("T")


@dataclass(frozen=True)
class Stored(Generic[T]):
    """What a step that makes a store entry hands back, and whether the store already held it."""

    value: T
    cached: bool  # True: found complete (made by an earlier run, or by the concurrent one this run waited for)


def lock_path(entry: Path) -> Path:
    """The lock file of the entry at `entry`: its sibling `<name>.lock`, which outlives the entry's quarantine."""
    return entry.with_name(f"{entry.name}.lock")


def produce_once(entry: Path, complete: Callable[[], bool], produce: Callable[[], None]) -> bool:
    """Make the entry at `entry` with `produce` unless `complete()`; True when it was (a hit).

    Concurrent callers make it once: one produces under the entry's lock, the others wait for it
    and then find the entry complete, a hit for them too.
    """
    if complete():
        return True
    with exclusive(lock_path(entry)):
        if complete():
            return True
        produce()
    return False


@contextmanager
def exclusive(lock: Path, waiting: Callable[[], None] = lambda: None) -> Iterator[None]:
    """Hold the flock on `lock` for the block: one process at a time (flow runs, test workers)
    makes a cache entry. A process that has to wait logs whom it waits for (the holder writes its
    pid and host into the file) and calls `waiting` once; the kernel drops the lock when its holder
    dies, however it dies. The descriptor is close-on-exec, so tools started under the lock do not keep it."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except PermissionError:  # another user's lock file (0644 under the usual umask): flock needs no write
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            started = time.monotonic()
            LOG.info("waiting for %s: %s holds it", lock, _holder(fd))
            waiting()
            fcntl.flock(fd, fcntl.LOCK_EX)
            LOG.info("%s free after %.0f s of waiting", lock, time.monotonic() - started)
        _HELD.add(fd)
        _record_holder(fd, f"pid {os.getpid()} on {socket.gethostname()} "
                           f"(since {datetime.now(UTC).isoformat(timespec='seconds')})")
        yield
    finally:
        if fd in _HELD:
            _HELD.discard(fd)
            _record_holder(fd, "")  # a lock file left behind names nobody
        os.close(fd)


# Lock descriptors this process holds. A child forked without exec (a data loader's worker) shares
# them, and a lock is released only once every copy is closed: the child closes its copies at once,
# so a killed run's lock never outlives it in a forgotten child.
_HELD: set[int] = set()


def _close_held_in_child() -> None:
    for fd in _HELD:
        with suppress(OSError):
            os.close(fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_close_held_in_child)


def _record_holder(fd: int, who: str) -> None:
    with suppress(OSError):  # opened read-only: waiters learn less, the lock holds all the same
        os.ftruncate(fd, 0)
        os.pwrite(fd, who.encode(), 0)


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 200, 0).decode(errors="replace").strip() or "a process that has not named itself yet"
    except OSError:
        return "another process"

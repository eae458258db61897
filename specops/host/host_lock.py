"""One benchmark per host, whoever starts it: a file lock per slot, beside the Prefect slots.

The Prefect slots (prefect_adapters/slot_limits.py) order the runs of one Prefect API. `specops run`
talks to a private API server of its own, so a CLI run and a worker's run of the same host never
saw each other's slot, and both measured on the same two cores (0.70x and 0.74x, against 1.50x
alone) into the regression baselines. An flock(2) on a file in a directory every user of the host
shares orders them all. The kernel drops it when its holder dies, however it dies, so a killed
run leaves no stale lock. Waiters queue by arrival (a ticket file each, beside the lock; a dead
waiter's ticket is skipped and removed), since flock wakes its waiters in no order. The holder
writes who it is into the file, so a waiting run can say whom it waits for.
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

import psutil

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


def _ticket(name: str) -> Path:
    """This process's place in the lock's queue: a file named by its arrival time (ns) and pid."""
    queue = lock_path(name).with_suffix(".queue")
    queue.mkdir(exist_ok=True)
    with suppress(OSError):
        queue.chmod(0o1777)  # every user's runs queue here
    ticket = queue / f"{time.time_ns():020d}-{os.getpid()}"
    ticket.touch()
    return ticket


def _first_in_line(ticket: Path) -> bool:
    """Whether no live process arrived before this ticket's (tickets of dead processes are removed)."""
    for other in sorted(ticket.parent.iterdir()):
        if other.name >= ticket.name:
            return True
        if _alive(other.name.rpartition("-")[2]):
            return False
        with suppress(OSError):
            other.unlink()
    return True


def _alive(pid: str) -> bool:
    try:
        return pid.isdigit() and psutil.Process(int(pid)).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait(fh: IO[str], name: str, on_wait: Callable[[str], None]) -> None:
    """Take the lock in arrival order: flock alone wakes waiters in no order (a run that came 7 min later won)."""
    said, ticket = None, _ticket(name)
    try:
        while not (_first_in_line(ticket) and _try(fh)):
            if said is None or time.monotonic() - said >= REPORT_EVERY_S:
                ahead = sum(1 for t in ticket.parent.iterdir() if t.name < ticket.name)
                on_wait(f"waiting for the host lock {name} (one benchmark per host, in arrival order; "
                        f"{lock_path(name)}): held by {holder_of(name)}; {ahead} run(s) ahead in the queue")
                said = time.monotonic()
            time.sleep(POLL_S)
    finally:
        ticket.unlink(missing_ok=True)


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

"""Cross-run cache keys built from content, never from run ids or path strings alone.

Prefect's default policy includes RUN_ID (so nothing is reused across runs), and Path inputs
hash by their string, not their content. This policy hashes: a recipe version (bump it when
a step's output format changes), the task's source, and canonical JSON of the inputs in which
model artifacts stand for their content sha256. A generation token stored in the cache
directory is part of every key, so deleting the cache invalidates the Prefect records that
point into it instead of handing back paths that no longer exist.

Every cached task takes `locked(ContentKey(...))`: Prefect's SERIALIZABLE isolation with a
lock manager on flock(2) in the shared cache (CacheLockManager), so two runs of one profile (two processes, two
workers on one host) compute a key once; the second waits for the first's commit and reads its
record. The kernel drops a lock when its holder's process ends, so a killed run never blocks
later ones; a run that waits says in its logs whom it waits for.
"""
from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from prefect.cache_policies import TASK_SOURCE, CachePolicy
from prefect.locking.protocol import LockManager
from pydantic import BaseModel

from prefect_adapters.run_logs import LOGGER
from specops.rundir import cache_root
from specops.sources.base import ModelArtifact
from specops.sources.integrity import GENERATION

LOCKS = ".prefect-locks"  # <cache>/.prefect-locks/<cache key>.lock, beside what the keys point into


def cache_generation(cache_dir: Path) -> str:
    """The cache's generation token; concurrent first runs agree on one (the first link wins)."""
    # Quarantining a corrupt entry removes it too (specops/sources/integrity.py).
    marker = Path(cache_dir) / GENERATION
    if not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = marker.with_name(f"{GENERATION}.{os.getpid()}.tmp")
        tmp.write_text(secrets.token_hex(8))
        try:
            os.link(tmp, marker)  # never replaces: a run that already keyed on a token keeps it
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    return marker.read_text().strip()


class CacheLockManager(LockManager):
    """Prefect's LockManager (prefect/locking/protocol.py) on flock(2), its lock files in the cache
    the run uses ($SPECOPS_CACHE, read when a lock is taken, not at import).

    A key's lock is an exclusive flock on `<key>.lock`, which the kernel drops when the holding
    process ends, however it ends (killed, crashed, or a zombie that nobody reaps): no waiter ever
    judges whether another run is alive, or breaks a lock by deleting its file. Prefect takes these
    locks without a hold timeout and names each holder by a random uuid (transactions.py
    BaseTransaction._holder, passed by Transaction.begin -> ResultStore.acquire_lock), which says
    nothing about the process, so the file also records host, pid and since for the logs of whoever
    waits. The descriptor is close-on-exec: servers and tools started under the lock do not keep it.
    """

    def __init__(self, lock_files_directory: Path | None = None) -> None:
        self._directory = Path(lock_files_directory) if lock_files_directory is not None else None

    @property
    def lock_files_directory(self) -> Path:
        return (self._directory if self._directory is not None else cache_root() / LOCKS).expanduser().resolve()

    def _lock_path_for_key(self, key: str) -> Path:
        return self.lock_files_directory.joinpath(key).with_suffix(".lock")  # as FileSystemLockManager names it

    def acquire_lock(self, key: str, holder: str, acquire_timeout: float | None = None,
                     hold_timeout: float | None = None) -> bool:
        attempt = _Attempt(self._lock_path_for_key(key), key, holder, acquire_timeout, hold_timeout)
        while (got := attempt.step()) is None:
            time.sleep(POLL_S)
        return got

    async def aacquire_lock(self, key: str, holder: str, acquire_timeout: float | None = None,
                            hold_timeout: float | None = None) -> bool:
        attempt = _Attempt(self._lock_path_for_key(key), key, holder, acquire_timeout, hold_timeout)
        while (got := attempt.step()) is None:
            await anyio.sleep(POLL_S)
        return got

    def release_lock(self, key: str, holder: str) -> None:
        path = self._lock_path_for_key(key)
        with _GUARD:
            held = _HELD.get(path)
            if held is not None and held.holder == holder:
                del _HELD[path]
        if held is None or held.holder != holder:  # what Prefect's FileSystemLockManager raises
            if not self.is_locked(key):
                raise ValueError(f"No lock for transaction with key {key}")
            raise ValueError(f"No lock held by {holder} for transaction with key {key}")
        try:  # unlinked while still locked: a waiter that opened this file sees it gone and opens anew
            os.unlink(path)
        except OSError:
            pass
        fcntl.flock(held.fd, fcntl.LOCK_UN)  # for a child forked under the lock too, which shares it
        os.close(held.fd)

    def is_locked(self, key: str, use_cache: bool = False) -> bool:
        path = self._lock_path_for_key(key)
        with _GUARD:
            if path in _HELD:
                return True
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared: two lookers do not block each other
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def is_lock_holder(self, key: str, holder: str) -> bool:
        with _GUARD:
            held = _HELD.get(self._lock_path_for_key(key))
        return held is not None and held.holder == holder

    def wait_for_lock(self, key: str, timeout: float | None = None) -> bool:
        wait = _Wait(self._lock_path_for_key(key), key, timeout)
        while (free := wait.step(busy=self.is_locked(key))) is None:
            time.sleep(POLL_S)
        return free

    async def await_for_lock(self, key: str, timeout: float | None = None) -> bool:
        wait = _Wait(self._lock_path_for_key(key), key, timeout)
        while (free := wait.step(busy=self.is_locked(key))) is None:
            await anyio.sleep(POLL_S)
        return free


POLL_S = 0.1  # as often as Prefect's own wait_for_lock looks
WAIT_LOG_EVERY_S = 60.0
LOG = logging.getLogger(f"{LOGGER}.cache")  # in the run's logs (prefect_adapters/run_logs.py)


@dataclass(frozen=True)
class _Held:
    holder: str
    fd: int


# The locks this process holds, by lock file: every manager instance (Prefect deep-copies cache
# policies) and every thread sees them, and two threads never both hold one, even where flock
# cannot tell them apart (NFS emulates it with POSIX locks, which are per process).
_HELD: dict[Path, _Held] = {}
_GUARD = threading.Lock()


def _forget_locks_in_child() -> None:
    """A child forked without exec (a data loader's worker) shares the parent's lock descriptors:
    it closes its copies so it neither releases the parent's locks nor keeps them past its death."""
    global _GUARD
    _GUARD = threading.Lock()  # another thread may have held it at the fork; none runs here
    for held in _HELD.values():
        try:
            os.close(held.fd)
        except OSError:
            pass
    _HELD.clear()


os.register_at_fork(after_in_child=_forget_locks_in_child)


class _Wait:
    """A wait for a lock: logs who holds it when the wait starts and every WAIT_LOG_EVERY_S while
    it lasts (Prefect's own wait_for_lock polls silently), and how long it took."""

    def __init__(self, path: Path, key: str, timeout: float | None) -> None:
        self.path, self.key = path, key
        self.started = time.monotonic()
        self.deadline = None if timeout is None else self.started + timeout
        self.next_log: float | None = None

    def step(self, busy: bool) -> bool | None:
        """True once free, False when the timeout is up, None to look again after POLL_S."""
        now = time.monotonic()
        if not busy:
            if self.next_log is not None:
                LOG.info("cache key %s: lock free after %.0f s of waiting", self.key[:12], now - self.started)
            return True
        if self.deadline is not None and now >= self.deadline:
            return False
        if self.next_log is None or now >= self.next_log:
            LOG.info("%s for cache key %s: %s holds its lock (%s)",
                     "waiting" if self.next_log is None else f"still waiting after {now - self.started:.0f} s",
                     self.key[:12], _describe_holder(self.path), self.path)
            self.next_log = now + WAIT_LOG_EVERY_S
        return None


class _Attempt(_Wait):
    """One acquire_lock: a non-blocking try each step, so the wait can say what it waits for."""

    def __init__(self, path: Path, key: str, holder: str, timeout: float | None,
                 hold_timeout: float | None) -> None:
        if hold_timeout is not None:  # Prefect 3.8.8 passes none (results.py ResultStore.acquire_lock)
            raise NotImplementedError("a CacheLockManager lock is held until released or until its holder's "
                                      "process ends: hold_timeout is not supported")
        super().__init__(path, key, timeout)
        self.holder = holder
        path.parent.mkdir(parents=True, exist_ok=True)

    def step(self, busy: bool = True) -> bool | None:
        with _GUARD:
            held = _HELD.get(self.path)
            if held is not None and held.holder == self.holder:
                return True  # re-entrant, as Prefect's
            fd = _try_flock(self.path) if held is None else None
            if fd is not None:
                _HELD[self.path] = _Held(self.holder, fd)
        if fd is not None:
            _write_holder(fd, self.holder)
        return super().step(busy=fd is None)


def _try_flock(path: Path) -> int | None:
    """A descriptor holding the exclusive flock of the file now at `path`; None while another holds it."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except PermissionError:  # another user's file (0644 under the usual umask): flock needs no write
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        try:
            now_there = os.stat(path)
        except FileNotFoundError:
            now_there = None
        mine = os.fstat(fd)
        if now_there is not None and (now_there.st_dev, now_there.st_ino) == (mine.st_dev, mine.st_ino):
            return fd
        os.close(fd)  # its holder released (and unlinked) it after we opened it: this file locks nothing now


def _write_holder(fd: int, holder: str) -> None:
    info = {"holder": holder, "host": socket.gethostname(), "pid": os.getpid(),
            "since": datetime.now(UTC).isoformat(timespec="seconds")}
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
    except OSError:  # opened read-only: waiters learn less, the lock holds all the same
        pass


def _describe_holder(path: Path) -> str:
    try:
        info = json.loads(Path(path).read_text())
        return f"pid {info['pid']} on {info['host']} (since {info['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not recorded its name yet"


def canonical(value: Any) -> Any:
    if isinstance(value, ModelArtifact):
        return {"source": value.source, "sha256": value.sha256, "revision": value.revision}
    if hasattr(value, "cache_identity"):  # a backend: its settings, never its object identity
        return canonical(value.cache_identity())
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return canonical(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted(canonical(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


@dataclass
class ContentKey(CachePolicy):
    recipe: str = "1"
    cache_dir_input: str = "cache_dir"  # the input naming the cache directory that holds outputs
    ignore: tuple[str, ...] = ()  # inputs that do not shape the output (e.g. the run directory)

    def compute_key(self, task_ctx, inputs: dict[str, Any], flow_parameters: dict[str, Any],
                    **kwargs: Any) -> str | None:
        source = TASK_SOURCE.compute_key(task_ctx, inputs, flow_parameters, **kwargs) or ""
        cache_dir = inputs.get(self.cache_dir_input)
        payload = {
            "recipe": self.recipe,
            "task": task_ctx.task.name,
            "source": source,
            "generation": cache_generation(Path(cache_dir)) if cache_dir else None,
            "inputs": canonical({k: v for k, v in inputs.items() if k not in self.ignore}),
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def locked(policy: CachePolicy) -> CachePolicy:
    """`policy` computed once per key across concurrent runs (prefect/cache_policies.py CachePolicy.configure)."""
    return policy.configure(isolation_level="SERIALIZABLE", lock_manager=CacheLockManager())

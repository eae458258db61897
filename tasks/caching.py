"""Cross-run cache keys built from content, never from run ids or path strings alone.

Prefect's default policy includes RUN_ID (so nothing is reused across runs), and Path inputs
hash by their string, not their content. This policy hashes: a recipe version (bump it when
a step's output format changes), the task's source, and canonical JSON of the inputs in which
model artifacts stand for their content sha256. A generation token stored in the cache
directory is part of every key, so deleting the cache invalidates the Prefect records that
point into it instead of handing back paths that no longer exist.

Every cached task takes `locked(ContentKey(...))`: Prefect's SERIALIZABLE isolation with a
file-system lock manager in the shared cache, so two runs of one profile (two processes, two
workers on one host) compute a key once; the second waits for the first's commit and reads its
record. A lock whose holder process died is broken, not waited on forever.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from prefect.cache_policies import TASK_SOURCE, CachePolicy
from prefect.locking.filesystem import FileSystemLockManager
from pydantic import BaseModel

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


class CacheLockManager(FileSystemLockManager):
    """Prefect's file-system lock manager, with its directory in the cache the run uses
    ($SPECOPS_CACHE, read when a lock is taken, not at import) and stale locks broken.

    Prefect takes these locks without a hold timeout (transactions.py Transaction.begin ->
    ResultStore.acquire_lock), so a killed run's lock file would make every later run of the key
    wait forever: a lock whose holder (Prefect's "host:pid:thread...") is a process of this host
    that no longer exists is removed. A lock file caught between its creation and its content
    counts as held.
    """

    def __init__(self, lock_files_directory: Path | None = None) -> None:
        self._directory = lock_files_directory
        super().__init__(Path(lock_files_directory or "."))

    @property
    def lock_files_directory(self) -> Path:  # type: ignore[override]
        return Path(self._directory) if self._directory is not None else cache_root() / LOCKS

    @lock_files_directory.setter
    def lock_files_directory(self, value: Path) -> None:  # FileSystemLockManager.__init__ sets it
        pass

    def _lock_path_for_key(self, key: str) -> Path:
        return self.lock_files_directory.joinpath(key).with_suffix(".lock")

    def _get_lock_info(self, key: str, use_cache: bool = True):
        try:
            info = super()._get_lock_info(key, use_cache=use_cache)
        except ValueError:  # created, not yet written by its holder
            return {"holder": "", "expiration": None, "path": self._lock_path_for_key(key)}
        if info is not None and holder_gone(info["holder"], _mtime(info["path"])):
            Path(info["path"]).unlink(missing_ok=True)
            self._locks.pop(key, None)
            return None
        return info


def _mtime(path: Path) -> float | None:
    try:
        return Path(path).stat().st_mtime
    except FileNotFoundError:
        return None


def holder_gone(holder: str, locked_at: float | None = None) -> bool:
    """Whether a Prefect lock holder ("host:pid:thread_id:thread_name[:task]") is a dead process of this
    host; a process that reuses the pid but started after the lock was taken (`locked_at`) is not it."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another host's process (a shared cache over NFS): not ours to judge
    try:
        started = psutil.Process(int(pid)).create_time()
    except psutil.NoSuchProcess:
        return True
    return locked_at is not None and started > locked_at + 1.0  # create_time is rounded to clock ticks


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

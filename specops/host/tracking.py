"""Records of every process group and container a run starts, so that what a dead run left is found.

Each record is a JSON file under <cache>/live/: what was started (`kind`: server, bench-tool,
prefect-server, ...; pid + create_time, so a recycled pid is never taken for it; or a
container id), the run that owns it (`owner`, the flow run id when there is one) and the specops
process that started it (`owner_pid` + `owner_create_time`). A normal stop removes the record;
specops.pipeline.janitor stops what is recorded for owners that are gone.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil

from specops.atomic_file import write_text
from specops.settings import cache_root

CREATE_TIME_TOLERANCE_S = 1.0  # psutil derives create_time from boot time + start ticks
# A run's own record, from its first moment (its directory, this process): never stopped by the janitor, which ends
# the run's statuses and writes its row when the process is gone without having finished.
RUN = "run"

# Who owns what this process starts: the orchestrator installs a lookup (flows: the current flow
# run's id), so the core can record ownership without knowing about Prefect.
_owner_lookup: Callable[[], str | None] = lambda: None  # noqa: E731


def set_owner_lookup(lookup: Callable[[], str | None]) -> None:
    global _owner_lookup
    _owner_lookup = lookup


def current_owner() -> str | None:
    try:
        return _owner_lookup() or None
    except Exception:  # no run context here (e.g. a thread outside the flow)
        return None


def live_dir() -> Path:
    path = cache_root() / "live"
    path.mkdir(parents=True, exist_ok=True)
    return path


def record_key(record: dict[str, Any]) -> str:
    """A process is named by its pid, a container by its id, a run by its directory (one process runs several:
    a comparison's members)."""
    if record.get("container_id"):
        return f"container-{record['container_id']}"
    if record.get("kind") == RUN:
        return f"run-{hashlib.sha256(record['run_dir'].encode()).hexdigest()[:16]}"
    return f"pid-{record['pid']}"


def register(record: dict[str, Any]) -> Path:
    """A process record needs 'pid' and 'create_time', a container record 'container_id'.
    Missing ownership is filled in: the current owner, and this process as owner_pid."""
    record = _owned(record)
    # Whole or absent: a janitor reading concurrently never sees half a record.
    return write_text(live_dir() / f"{record_key(record)}.json", json.dumps(record, sort_keys=True))


def _owned(record: dict[str, Any]) -> dict[str, Any]:
    me = psutil.Process()
    return {"kind": "server", "owner": current_owner(), "owner_pid": me.pid,
            "owner_create_time": me.create_time()} | {k: v for k, v in record.items() if v is not None}


def unregister(record: dict[str, Any]) -> None:
    (live_dir() / f"{record_key(record)}.json").unlink(missing_ok=True)


def track_process(pid: int, kind: str, what: str, **extra: Any) -> dict[str, Any]:
    """Record the process group led by `pid`; returns the record (for unregister)."""
    try:
        create_time = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:  # already gone: nothing to find later
        return {"pid": pid}
    record = _owned({"pid": pid, "create_time": create_time, "kind": kind, "what": what, **extra})
    register(record)
    return record


def track_run(run_dir: Path, role: dict[str, Any] | None) -> dict[str, Any]:
    """This process's record of the run in `run_dir`: `role` its RunRole as data (None: a directory that writes no
    row of its own, a sweep's, whose cells are the runs)."""
    return track_process(os.getpid(), RUN, f"run {run_dir}", run_dir=str(run_dir), role=role, has_row=role is not None)


def untrack_run(run_dir: Path) -> None:
    """The run ended in its own process (its statuses and row written): nothing for a janitor to finish."""
    unregister({"kind": RUN, "run_dir": str(run_dir)})


def records() -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(live_dir().glob("*.json")):
        try:
            yield path, json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):  # removed meanwhile, or written by a crashed writer
            path.unlink(missing_ok=True)


def same_process(pid: int | None, create_time: float | None) -> psutil.Process | None:
    """The process `pid` if it is still the one started at `create_time` (and not a zombie)."""
    if not pid or create_time is None:
        return None
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - create_time) < CREATE_TIME_TOLERANCE_S and proc.status() != psutil.STATUS_ZOMBIE:
            return proc
    except psutil.NoSuchProcess:
        pass
    return None


def owner_alive(record: dict[str, Any]) -> bool:
    """Whether the specops process that started it still runs (records without one: no)."""
    return same_process(record.get("owner_pid"), record.get("owner_create_time")) is not None

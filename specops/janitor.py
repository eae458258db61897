"""Records of live servers, so that a run that dies before its teardown can be cleaned up.

Every started server is recorded under <cache>/live/ with its process group and the run that
owns it; a normal teardown removes the record. `reap()` (Prefect on_cancellation/on_crashed
hooks, `specops janitor`) stops whatever a dead run left behind.
"""
from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from specops.rundir import cache_root


def live_dir() -> Path:
    path = cache_root() / "live"
    path.mkdir(parents=True, exist_ok=True)
    return path


def record_key(record: dict[str, Any]) -> str:
    """A process is named by its pid, a container by its id."""
    return f"container-{record['container_id']}" if record.get("container_id") else f"pid-{record['pid']}"


def register(record: dict[str, Any]) -> Path:
    """A process record needs 'pid' and 'create_time' (so a recycled pid is never killed), a
    container record 'container_id'; 'owner' (e.g. a flow run id) is optional."""
    path = live_dir() / f"{record_key(record)}.json"
    path.write_text(json.dumps(record, sort_keys=True))
    return path


def unregister(record: dict[str, Any]) -> None:
    (live_dir() / f"{record_key(record)}.json").unlink(missing_ok=True)


def _alive(record: dict[str, Any]) -> psutil.Process | None:
    try:
        proc = psutil.Process(record["pid"])
        if abs(proc.create_time() - record["create_time"]) < 1.0:
            return proc
    except (psutil.NoSuchProcess, KeyError):
        pass
    return None


def _kill_group(proc: psutil.Process, timeout_s: float) -> None:
    procs = [proc, *proc.children(recursive=True)]
    try:
        os.killpg(os.getpgid(proc.pid), signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    _, alive = psutil.wait_procs(procs, timeout=timeout_s)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


def reap(owner: str | None = None, timeout_s: float = 10.0, log: Callable[[str], None] = print) -> int:
    """Stop recorded servers (all, or those of one owner, e.g. a flow run id). Returns how many."""
    stopped = 0
    for path in sorted(live_dir().glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            path.unlink(missing_ok=True)
            continue
        if owner is not None and record.get("owner") != owner:
            continue
        if record.get("container_id"):
            stopped += _reap_container(record, timeout_s, log)
            path.unlink(missing_ok=True)
            continue
        proc = _alive(record)
        if proc is not None:
            log(f"janitor: stopping leftover server pid {record['pid']} ({record.get('what', '?')})")
            _kill_group(proc, timeout_s)
            stopped += 1
        path.unlink(missing_ok=True)
    return stopped


def _reap_container(record: dict[str, Any], timeout_s: float, log: Callable[[str], None]) -> int:
    from specops.launch.docker_launcher import ContainerHandle, DockerLauncher
    from specops.launch.errors import LaunchError

    handle = ContainerHandle(record["container_id"], record.get("container_name", ""),
                             Path(record["log_path"]) if record.get("log_path") else None)
    try:
        log(f"janitor: stopping leftover container {handle.name or handle.id[:12]} ({record.get('what', '?')})")
        DockerLauncher().stop(handle, timeout_s)
        return 1
    except LaunchError as err:  # daemon gone or container already removed: nothing left to stop
        log(f"janitor: container {handle.id[:12]}: {err}")
        return 0


def wait_gone(pids: list[int], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(p) for p in pids):
            return True
        time.sleep(0.1)
    return False

"""Stop what runs that are gone left behind: processes and containers recorded by specops.host.tracking.

Every process group and container a run starts is recorded with the run that owns it (its flow
run id) and the specops process that started it. `sweep()` (`specops janitor`) stops what belongs
to runs that are over, never a live concurrent run's: the orchestrator's word on a flow run wins
(`runs`: flow run id -> still running, from the Prefect API, which also knows runs whose process
this host cannot see: another PID namespace, a shared cache); without it, a run is over when its
specops process is gone. The Prefect on_cancellation/on_crashed hooks stop one flow run's
(`owner=`) and remove its containers by label; `everything=True` stops all that is recorded.
"""
from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

import psutil

from specops.host.processes import remove_omp_registrations, stale_omp_registrations, wait_gone
from specops.host.tracking import (
    CREATE_TIME_TOLERANCE_S,
    RUN,
    live_dir,
    owner_alive,
    record_key,
    records,
    register,
    same_process,
    unregister,
)
from specops.run.rundir import mark_abandoned

SHM_REGION = "shm-region"  # counted with what was stopped, reported as removed
_ABANDONED = ("the run's process (pid {}) ended without finishing; specops janitor stopped what it "
              "left")

__all__ = ["live_dir", "live_records", "owners", "reap", "record_key", "register", "remove_containers",
           "run_alive", "stopped_parts", "summary", "sweep", "unregister"]


def run_alive(record: dict[str, Any], runs: Mapping[str, bool] | None = None) -> bool:
    """Whether the run that owns a record still runs: what the orchestrator says of its flow run
    when it knows it (`runs`), else whether the specops process that started it still runs."""
    owner = record.get("owner")
    if runs is not None and owner in runs:
        return runs[owner]
    return owner_alive(record)


def owners() -> set[str]:
    """The flow runs (or other owners) that something recorded belongs to."""
    return {r["owner"] for _, r in records() if r.get("owner")}


def sweep(owner: str | None = None, *, everything: bool = False, runs: Mapping[str, bool] | None = None,
          timeout_s: float = 10.0, log: Callable[[str], None] = print,
          abandoned: Callable[[dict[str, Any]], None] | None = None) -> Counter[str]:
    """Stop recorded processes and containers: one owner's (e.g. a flow run id), or those of runs
    that are over (see run_alive), or (everything) all. Returns how many were stopped per kind;
    records of what already ended are dropped. A run's own record (tracking.RUN) of a run that is over ends its
    statuses and goes to `abandoned` (which writes its row); a live run's, or with `owner` (its own hooks), stays."""
    stopped: Counter[str] = Counter()
    for path, record in records():
        if record.get("kind") == RUN:
            if owner is None and not run_alive(record, runs):
                _end_run(path, record, log, abandoned)
            continue
        if owner is not None:
            if record.get("owner") != owner:
                continue
        elif not everything and run_alive(record, runs):
            continue
        kind = record.get("kind", "server")
        if record.get("container_id"):
            stopped[kind] += _reap_container(record, timeout_s, log)
        elif (proc := same_process(record.get("pid"), record.get("create_time"))) is not None:
            log(f"janitor: stopping leftover {kind} pid {record['pid']} ({record.get('what', '?')})")
            _kill_group(proc, timeout_s)
            stopped[kind] += 1
        elif survivors := _group_survivors(record):
            log(f"janitor: stopping what is left of {kind} pid {record['pid']}'s process group "
                f"({', '.join(str(p.pid) for p in survivors)}; {record.get('what', '?')})")
            _kill_all(survivors, timeout_s)
            stopped[kind] += 1
        path.unlink(missing_ok=True)
        why = _ABANDONED.format(record.get("owner_pid", "?"))
        if record.get("run_dir") and mark_abandoned(Path(record["run_dir"]), why):
            log(f"janitor: {record['run_dir']}: status failed (its run is gone)")
    from specops.backends.triton_server import sweep_stale_shm_regions  # a sweep's only need of the Triton server

    for region in sweep_stale_shm_regions():
        log(f"janitor: removed {region} (Triton shared memory of a specops process that is gone)")
        stopped[SHM_REGION] += 1
    for registration in remove_omp_registrations(stale_omp_registrations()):
        log(f"janitor: removed {registration} (the OpenMP registration of a vLLM process that is gone)")
        stopped[SHM_REGION] += 1
    return stopped


def _end_run(path: Path, record: dict[str, Any], log: Callable[[str], None],
             abandoned: Callable[[dict[str, Any]], None] | None) -> None:
    """A run whose process is gone: every status it left open ends failed, where it was, and its row is written
    (`abandoned`; one it wrote before it died, while reporting, is replaced: it did not finish)."""
    run_dir = Path(record["run_dir"])
    if mark_abandoned(run_dir, _ABANDONED.format(record.get("owner_pid", "?")) + " (killed)"):
        log(f"janitor: {run_dir}: status failed (its run is gone)")
    if abandoned is not None and record.get("has_row"):
        abandoned(record)
    path.unlink(missing_ok=True)


def reap(owner: str | None = None, timeout_s: float = 10.0, log: Callable[[str], None] = print) -> int:
    """sweep(), as a count."""
    return sum(sweep(owner, timeout_s=timeout_s, log=log).values())


def stopped_parts(stopped: Counter[str]) -> tuple[str, str]:
    """What a sweep stopped per kind ("nothing"), and apart from it the shared-memory regions it removed: those are
    any dead process's, never credited to one run ("" when none)."""
    what = ", ".join(f"{n} {kind}" for kind, n in sorted(stopped.items()) if n and kind != SHM_REGION) or "nothing"
    removed = f"; removed {stopped[SHM_REGION]} shared-memory region(s) of dead specops processes" \
        if stopped[SHM_REGION] else ""
    return what, removed


def summary(stopped: Counter[str], kept: Mapping[str, int] | None = None) -> str:
    """`specops janitor`'s report: what it stopped per kind, and what it left to live runs, naming each run."""
    what, removed = stopped_parts(stopped)
    kept = {who: n for who, n in (kept or {}).items() if n}
    left = (f"; left {sum(kept.values())} process(es)/container(s) of {len(kept)} live run(s) alone: "
            + "; ".join(f"{n} of {who}" for who, n in sorted(kept.items()))) if kept else ""
    return f"janitor: stopped {what}{left}{removed}"


def live_records(runs: Mapping[str, bool] | None = None) -> dict[str, int]:
    """Whose processes and containers are still alive, and how many of each: the run (its directory, its flow run
    and the specops process that owns it) -> how many of its records."""
    listed = list(records())
    run_dirs = {(r.get("owner"), r.get("owner_pid")): r.get("run_dir") for _, r in listed if r.get("kind") == RUN}
    out: Counter[str] = Counter()
    for _, record in listed:
        if record.get("kind") != RUN and run_alive(record, runs):
            out[_whose(record, run_dirs.get((record.get("owner"), record.get("owner_pid"))))] += 1
    return dict(out)


def _whose(record: dict[str, Any], run_dir: str | None) -> str:
    who = [f"flow run {record['owner']}"] if record.get("owner") else []
    who.append(f"pid {record.get('owner_pid', '?')}")
    return f"{run_dir or 'a run'} ({', '.join(who)})"


def remove_containers(owner: str, timeout_s: float = 10.0, log: Callable[[str], None] = print) -> int:
    """Remove every container labelled with this flow run (one-shot builds too, which are not
    recorded); 0 when there is no Docker to ask."""
    from specops.launch import LABEL_FLOW_RUN, DockerLauncher, DockerUnavailable

    try:
        return DockerLauncher(api_timeout_s=timeout_s).janitor({LABEL_FLOW_RUN: owner}, timeout_s=timeout_s)
    except (ImportError, DockerUnavailable):  # no docker-py or no daemon: this host runs no containers
        return 0
    except Exception as err:  # the daemon's API errors included: cleanup reports, it does not raise
        log(f"janitor: containers of flow run {owner}: {type(err).__name__}: {err}")
        return 0


def _group_survivors(record: dict[str, Any]) -> list[psutil.Process]:
    """Members of a recorded process group whose leader is gone (killed alone, e.g. by the OOM
    killer, or together with specops by a `kill -9` of both): they still carry its pid as their
    group id. Only when the number is not in use by another process, and only members started
    after the leader (the pid would have to be reused by another group leader that died too
    for this to pick up strangers)."""
    pgid, started = record.get("pid"), record.get("create_time")
    if not pgid or started is None:
        return []
    try:  # the leader may linger as a zombie (this host's init reaps no orphan): that is fine
        if abs(psutil.Process(pgid).create_time() - started) >= CREATE_TIME_TOLERANCE_S:
            return []  # the number belongs to another process now
    except psutil.NoSuchProcess:
        pass
    found = []
    for proc in psutil.process_iter(["create_time", "status"]):
        try:
            if (os.getpgid(proc.pid) == pgid and proc.info["create_time"] >= started - CREATE_TIME_TOLERANCE_S
                    and proc.info["status"] != psutil.STATUS_ZOMBIE):
                found.append(proc)
        except (ProcessLookupError, psutil.Error):
            pass
    return found


def _kill_group(proc: psutil.Process, timeout_s: float) -> None:
    """SIGTERM the group, SIGKILL what is left after timeout_s (descendants that left the group too)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(os.getpgid(proc.pid), signal.SIGTERM)
    _kill_all([proc, *proc.children(recursive=True)], timeout_s, signalled=True)


def _kill_all(procs: list[psutil.Process], timeout_s: float, signalled: bool = False) -> None:
    """SIGTERM each (unless already signalled), SIGKILL what is left after timeout_s."""
    if not signalled:
        for p in procs:
            with suppress(psutil.NoSuchProcess):
                p.terminate()
    alive = wait_gone(procs, timeout_s)
    for p in alive:
        with suppress(psutil.NoSuchProcess):
            p.kill()
    wait_gone(alive, 5.0)


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

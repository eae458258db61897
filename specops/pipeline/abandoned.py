"""The row of a run whose process died before it finished: its RunResult, FAILED at the step its status.json names
(INTERRUPTED where its status says an interrupt had ended it there before the process was killed),
built from its run directory (profile.yaml, status.json; manifest.json when it had written its result) and the
janitor's record of it (tracking.track_run). The row replaces one the run may have written before it died.

The janitor's environment chooses the results database ($SPECOPS_RESULTS_URL): where that refuses the row, the
result is kept in the run directory with a pointer, as a run's own record step does, and the next run (or `specops
results import`) records it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specops.pipeline.backend import backend_for, tool_for
from specops.pipeline.summarize import RunFacts, ended_failed, run_result
from specops.profile.loader import LoadedProfile, strict_load
from specops.profile.schema import Profile
from specops.results import durable
from specops.results.durable import MANIFEST
from specops.results.model import Failure, RunResult
from specops.results.role import RunRole
from specops.results.store import ResultsError, ResultsStore
from specops.run.rundir import INTERRUPTED, RunDir, RunProgress, read_status

PROVENANCE = ("_source", "_overrides")  # what a run directory's profile.yaml adds to the resolved profile


def run_profile(loaded: LoadedProfile) -> dict[str, Any]:
    """The profile.yaml of a run directory (tasks/profile.py create_run_dir): the resolved profile, and where it
    came from, which abandoned_result reads back."""
    return loaded.resolved | dict(zip(PROVENANCE, (str(loaded.path), list(loaded.overrides))))


class RunKilled(RuntimeError):
    """The run's process ended without finishing (killed, or died): what its row's failure says."""


class RunKilledAfterInterrupt(BaseException):
    """The run was interrupted (Ctrl-C, SIGTERM, a cancellation: its status said so at once) and its process ended
    before it finished (a supervisor's grace ran out): an interrupted run, never judged. Not an Exception, as the
    interrupt it stands for is not (specops/pipeline/summarize.py run_result)."""


def abandoned_result(record: dict[str, Any]) -> RunResult:
    """The run's RunResult as the janitor finds it: failed where its status says it was (interrupted when its status
    says it was interrupted there); what it measured kept when it had written its result (killed while reporting),
    else nothing measured."""
    run_path = Path(record["run_dir"])
    status = read_status(run_path)
    step, variant = status.get("step") or "flow", status.get("variant") or None
    interrupted = status.get("state") == INTERRUPTED
    kind = RunKilledAfterInterrupt if interrupted else RunKilled
    error = kind(f"the run's process (pid {record.get('pid', '?')}) ended without finishing at {step} (killed"
                 f"{' after it was interrupted' if interrupted else ''}); specops janitor wrote this row")
    if (run_path / MANIFEST).is_file():
        failure = Failure(step=step, variant=variant, error=f"{type(error).__name__}: {error}")
        return ended_failed(durable.read_result(run_path / MANIFEST), failure, interrupted)
    doc = strict_load((run_path / "profile.yaml").read_text(encoding="utf-8"))
    source, overrides = doc.pop(PROVENANCE[0], str(run_path / "profile.yaml")), doc.pop(PROVENANCE[1], [])
    profile = Profile.model_validate(doc)
    loaded = LoadedProfile(profile, Path(source), tuple(overrides), profile.model_dump(mode="json"))
    progress = RunProgress(started_at=status.get("started_at") or record.get("create_time") or 0.0,
                           failed_at=(step, variant or ""))
    role = RunRole.model_validate(record.get("role") or {})
    return run_result(loaded, RunDir(run_path, progress), backend_for(profile), tool_for(profile), RunFacts(),
                      error, role)


def record_abandoned(record: dict[str, Any]) -> str:
    """Write the run's result (manifest.json) and its row; what was done, in one line."""
    result = abandoned_result(record)
    durable.save_result(result, Path(result.run_dir))
    try:
        with ResultsStore.open() as store:
            store.append(result)
    except ResultsError as exc:
        durable.mark_unrecorded(result, str(exc))
        return f"{result.run_dir}: {result.verdict.value} at {result.failure.step}, kept unrecorded ({exc})"
    return f"{result.run_dir}: {result.verdict.value} at {result.failure.step}, row recorded"

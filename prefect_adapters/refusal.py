"""A flow's end for a profile it cannot run (a name that is not a profile, an override that does not apply):
one ERROR line in the flow run's log naming the profile and what it may be, and the Failed state whose message
says so, with no traceback from specops code.

Raised instead, from a task, Prefect 3.9 logs it as three tracebacks: the task's (task_engine.py
handle_retry: "Task run failed with exception", exc_info=True), the flow's (flow_engine.py run_context:
"Encountered exception during execution", logger.exception), and, for a deployment's run, the engine's
(flow_engine.py run_flow: "Engine execution exited with unexpected exception", exc_info=True). A Failed state
returned by the flow ends the run the same way with the first two gone; the third is Prefect's for every
Failed flow run of a deployment (run_flow re-raises the final state's exception to its caller), so it stays,
its traceback Prefect's frames alone. The flow's own tasks keep their tracebacks: those are faults, not input.
So the load happens here, in the flow's own body, not in a task (a task that returned the Failed state would
log "Finished in state Failed" at ERROR: a second line).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from prefect import get_run_logger
from prefect.states import Failed, State

from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile, load_profile
from specops.run.rundir import RunDirError, check_free_run_id

_handed: ContextVar[dict[tuple[str, tuple[str, ...]], LoadedProfile] | None] = ContextVar("handed", default=None)


@contextmanager
def handed_over(profile: str, overrides: Sequence[str], loaded: LoadedProfile) -> Iterator[None]:
    """In the block, loaded_or_refused(profile, overrides) is `loaded`, its caller's load (`specops run` loads it
    to refuse a bad profile before Prefect starts). Not a flow parameter: a field in every deployment's form."""
    token = _handed.set({**(_handed.get() or {}), (str(profile), tuple(overrides)): loaded})
    try:
        yield
    finally:
        _handed.reset(token)


def loaded_or_refused(profile: str, overrides: Sequence[str] | None) -> LoadedProfile | State:
    """The profile loaded with the overrides, which the flow hands to every step (its run's one load of it,
    or its caller's: `handed_over`); or the Failed state the flow returns at once."""
    try:
        handed = (_handed.get() or {}).get((profile, tuple(overrides or ())))
        loaded = handed or load_profile(profile, list(overrides or []))
    except ProfileError as error:
        return _refused(error)
    get_run_logger().info("profile %s (%s) valid, sha256 %s", loaded.profile.name, loaded.path, loaded.sha256[:12])
    return loaded


def refused_profiles(profiles: Sequence[str], overrides: Sequence[str]) -> State | None:
    """None when every profile loads with the overrides; else the Failed state a flow returns at once."""
    try:
        for profile in profiles:
            load_profile(profile, list(overrides))
    except ProfileError as error:
        return _refused(error)
    return None


def refused_run_id(run_id: str | None, *parents: str) -> State | None:
    """None when `run_id` (a flow's parameter) is empty or names a new directory artifacts/<parents...>/<run id>;
    else the Failed state a flow returns at once, before its first run (a calibration's directory was refused after
    all its runs)."""
    try:
        check_free_run_id(run_id, *parents, field="run_id")
    except RunDirError as error:
        return _refused(error)
    return None


def _refused(error: ProfileError | RunDirError) -> State:
    get_run_logger().error("%s", error)
    # A Python caller of the flow gets the ProfileError raised (Prefect raises a Failed state's data);
    # without its traceback, the deployment run's engine line shows no specops frame either.
    return Failed(message=str(error), data=error.with_traceback(None))

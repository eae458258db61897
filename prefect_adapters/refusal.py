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
log "Finished in state Failed" at ERROR: a second line). The engine's line is said without its traceback for a
refusal (_QuietRefusals): the refusal's own line says all. It names what the run was given: `overrides` (the flow's
parameter; the CLI says `--set`), a shipped profile by its place in the checkout (not a worker's temporary clone).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from prefect import get_run_logger
from prefect.states import Failed, State

from specops.profile.errors import ProfileError
from specops.profile.loader import CLI_OVERRIDES, OVERRIDES, LoadedProfile, load_profile, profiles_dir
from specops.run.rundir import RunDirError, check_free_run_id

T = TypeVar("T")
_handed: ContextVar[dict[tuple[str, tuple[str, ...]], LoadedProfile] | None] = ContextVar("handed", default=None)


@contextmanager
def handed_over(*loads: tuple[str, Sequence[str], LoadedProfile]) -> Iterator[None]:
    """In the block, loaded_or_refused(profile, overrides) is the load handed over with that profile and those
    overrides: its caller's (the CLI loads a profile to refuse it before Prefect starts; a compare, upgrade or
    calibrate flow hands its member runs what it loaded). Not a flow parameter: a field in every deployment's form."""
    token = _handed.set({**(_handed.get() or {}), **{(str(p), tuple(o)): loaded for p, o, loaded in loads}})
    try:
        yield
    finally:
        _handed.reset(token)


def loaded_or_refused(profile: str, overrides: Sequence[str] | None) -> LoadedProfile | State:
    """The profile loaded with the overrides, which the flow hands to every step (its run's one load of it,
    or its caller's: `handed_over`); or the Failed state the flow returns at once."""
    given = tuple(overrides or ())
    loaded = checked_or_refused(lambda: (_handed.get() or {}).get((profile, given)) or load_profile(profile, [*given]))
    if isinstance(loaded, LoadedProfile):
        get_run_logger().info("profile %s (%s) valid, sha256 %s", loaded.profile.name, loaded.path, loaded.sha256[:12])
    return loaded


def checked_or_refused(check: Callable[[], T]) -> T | State:
    """What `check` returns (a validation of what the flow loaded, in memory), or the Failed state a flow returns at
    once where it refuses it (a ProfileError)."""
    try:
        return check()
    except ProfileError as error:
        return _refused(error)


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
    if isinstance(error, ProfileError):
        error = as_the_run_was_given(error)
    get_run_logger().error("%s", error)
    # A Python caller of the flow gets the ProfileError raised (Prefect raises a Failed state's data);
    # without its traceback, the deployment run's engine line shows no specops frame either.
    return Failed(message=str(error), data=error.with_traceback(None))


def as_the_run_was_given(error: ProfileError) -> ProfileError:
    """The refusal with the names the run's parameters use (see the module's docstring)."""
    shipped = f"{profiles_dir()}{os.sep}"

    def renamed(text: str) -> str:
        return text.replace(shipped, f"profiles{os.sep}").replace(CLI_OVERRIDES, OVERRIDES)

    return ProfileError(renamed(error.origin), [(field, renamed(message)) for field, message in error.problems])


REFUSALS = (ProfileError, RunDirError)


class _QuietRefusals(logging.Filter):
    """The engine's line for a run that ended in a refusal, without a traceback (its frames are Prefect's alone, and
    the refusal's own line said why), and at INFO: the run's one ERROR line is the refusal's."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, REFUSALS) and "exited with unexpected exception" in str(record.msg):
            record.msg, record.args = "Engine execution ended: the run was refused (the line above says why)", ()
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


# the engine's error_logger (flow_run_logger), and prefect/engine.py handle_engine_signals' own, which says it again
for _name in ("prefect.flow_runs", "prefect.engine"):
    logging.getLogger(_name).addFilter(_QuietRefusals())

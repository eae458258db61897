"""One decorator for a pipeline step: a Prefect task never cached, keeping no result of its own, timed if told.

A step's inputs are a run's live objects (its run directory, servers, backends) and what it returns belongs to that
run, which records it itself (manifest.json, the results database); Prefect's cache keys would hash them and its
result storage would pickle them. A step that caches (a download, a build, a render, a training) looks its entry up
in the verified store itself: nothing outside the store points into it.

forward_specops_logs puts specops' own loggers (`specops.*`: servers starting and stopping, containers, processes
killed) in the flow run's logs. Prefect's PREFECT_LOGGING_EXTRA_LOGGERS would attach its API handler too
(prefect/logging/configuration.py, setup_logging), but only if set in every process that runs flows, and it leaves
the loggers at the root's WARNING, so their INFO lines would never reach it. Done here, it holds wherever the flow's
modules are imported: `specops run`, or a worker's flow-run process.
"""
from __future__ import annotations

import functools
import inspect
import logging

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext, TaskRunContext
from prefect.logging.handlers import APILogHandler

LOGGER = "specops"


def step(fn=None, /, *, timed: str | None = None, label: str = "{variant.name}", announce: bool = True, **options):
    """`@step` or `@step(retries=2, ...)`: task(cache_policy=NO_CACHE, persist_result=False, **options). With
    `timed`, each call (each retry too) runs in its `run` argument's run.timed(timed, label, announce), `label`
    formatted with the call's arguments: its variant's name unless told (e.g. "{role}", or "results")."""
    def decorate(fn):
        @functools.wraps(fn)  # Prefect reads the step's name, parameters and docstring through it
        def timed_call(*args, **kwargs):
            call = inspect.signature(fn).bind(*args, **kwargs)
            call.apply_defaults()
            with call.arguments["run"].timed(timed, label.format_map(call.arguments), announce):
                return fn(*args, **kwargs)

        return task(cache_policy=NO_CACHE, persist_result=False, **options)(timed_call if timed else fn)

    return decorate(fn) if fn is not None else decorate


class InRun(logging.Filter):
    """Records logged inside a flow or task run. specops also logs on threads of its own (a tool's
    output reader, a watchdog) and from commands outside any run (`specops janitor`): those have
    no flow run to go to, and Prefect's handler would warn about every one of them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return (getattr(record, "flow_run_id", None) is not None or FlowRunContext.get() is not None
                or TaskRunContext.get() is not None)


def forward_specops_logs(level: int = logging.INFO) -> logging.Logger:
    """Send specops' loggers at `level` and above to the current flow run's logs (idempotent)."""
    logger = logging.getLogger(LOGGER)
    if logger.getEffectiveLevel() > level:
        logger.setLevel(level)
    if not any(isinstance(h, APILogHandler) for h in logger.handlers):  # also when Prefect's setting added one
        handler = APILogHandler()
        handler.addFilter(InRun())
        logger.addHandler(handler)
    return logger

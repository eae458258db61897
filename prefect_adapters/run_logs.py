"""specops' own loggers (`specops.*`: servers starting and stopping, containers, processes killed)
in the flow run's logs, next to the tasks' own lines.

Prefect's PREFECT_LOGGING_EXTRA_LOGGERS would attach its API handler too (prefect/logging/
configuration.py, setup_logging), but only if set in every process that runs flows, and it
leaves the loggers at the root's WARNING, so their INFO lines would never reach it. Done here,
it holds wherever the flow's modules are imported: `specops run`, or a worker's flow-run process.
"""
from __future__ import annotations

import logging

from prefect.context import FlowRunContext, TaskRunContext
from prefect.logging.handlers import APILogHandler

LOGGER = "specops"


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

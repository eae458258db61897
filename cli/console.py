"""The console of `specops run`: Prefect's log lines without their tracebacks.

Prefect logs a failed task and then its failed flow with exc_info, so one error prints as two
stacked tracebacks above the one-line message `specops run` ends with. Only the console
handlers are changed, and only in how they format: the records themselves (and so the API
handler, the Prefect UI and the run's logs) keep their tracebacks. `--debug` leaves this off.
"""
from __future__ import annotations

import copy
import logging


class WithoutTraceback(logging.Formatter):
    """Formats as `inner` does, minus exc_info, exc_text and stack_info."""

    def __init__(self, inner: logging.Formatter | None):
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            record = copy.copy(record)  # the other handlers still see the traceback
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return self.inner.format(record)


def drop_console_tracebacks() -> int:
    """Wrap the formatter of every console handler on the root and `prefect*` loggers; return how many.

    Prefect's API handlers are not stream handlers, so they are left alone."""
    loggers = [logging.getLogger()] + [logger for name, logger in logging.Logger.manager.loggerDict.items()
                                       if name.startswith("prefect") and isinstance(logger, logging.Logger)]
    wrapped = 0
    for handler in (h for logger in loggers for h in logger.handlers):
        console = isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
        if console and not isinstance(handler.formatter, WithoutTraceback):
            handler.setFormatter(WithoutTraceback(handler.formatter))
            wrapped += 1
    return wrapped

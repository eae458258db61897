"""Console handlers print a failed step's log line without its traceback; other handlers keep it."""
from __future__ import annotations

import io
import logging

from cli.common import WithoutTraceback, drop_console_tracebacks


def _log_failure(logger: logging.Logger) -> None:
    try:
        raise ValueError("vocab_size 1000 != target's 49152")
    except ValueError:
        logger.error("Task run failed with exception: %s", "VocabularyMismatch(...)", exc_info=True, stack_info=True)


def test_console_drops_the_traceback_and_the_other_handlers_keep_it():
    logger = logging.getLogger("prefect.test_console")
    logger.propagate = False
    console, api = io.StringIO(), io.StringIO()
    console_handler = logging.StreamHandler(console)
    console_handler.setFormatter(logging.Formatter("%(levelname)s | %(message)s"))
    kept = logging.StreamHandler(api)
    kept.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(console_handler)
    try:
        drop_console_tracebacks()  # wraps console_handler (and leaves what it wrapped before alone)
        logger.addHandler(kept)  # added after: stands in for the API handler
        _log_failure(logger)
    finally:
        logger.handlers.clear()
    assert isinstance(console_handler.formatter, WithoutTraceback)
    assert console.getvalue() == "ERROR | Task run failed with exception: VocabularyMismatch(...)\n"
    assert "Traceback" in api.getvalue() and "Stack (most recent call last)" in api.getvalue()


def test_wrapping_twice_is_a_no_op():
    logger = logging.getLogger("prefect.test_console_twice")
    handler = logging.StreamHandler(io.StringIO())
    logger.addHandler(handler)
    try:
        drop_console_tracebacks()
        first = handler.formatter
        drop_console_tracebacks()
        assert handler.formatter is first
    finally:
        logger.handlers.clear()

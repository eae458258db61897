"""Teardown while an error propagates, without letting the teardown's own failure replace it."""
from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


def teardown_quietly(teardown: Callable[[], object], what: str) -> None:
    """Run a teardown from an `except` block: its own failure is logged, not raised.

    Raised, it would replace the error that caused the teardown (a "ports still bound" from
    stop() hiding the "could not bind its ports" that made us stop), and that one says why.
    """
    try:
        teardown()
    except Exception as err:  # an interrupt still propagates
        log.warning("%s failed while handling an earlier error: %s: %s", what, type(err).__name__, err)

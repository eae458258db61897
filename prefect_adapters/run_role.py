"""The role a parent flow gives the specdec runs it starts (a compare, calibrate or upgrade member): set around the
subflow call, read in specdec's body, as `refusal.handed_over` hands it the caller's load.

Not a flow parameter: every parameter shows in every deployment's form, and this one was a raw JSON editor there
("Parent flows set it") that a person could only break. A sync subflow runs in its caller's thread and context
(prefect/flow_engine.py run_flow_sync), so the variable set around the call is the one its body reads.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from specops.results.role import RunRole

_given: ContextVar[RunRole | None] = ContextVar("run_role", default=None)


@contextmanager
def in_role(role: RunRole) -> Iterator[None]:
    """In the block, a specdec run started here is a run in `role` (default: a run of its own)."""
    token = _given.set(role)
    try:
        yield
    finally:
        _given.reset(token)


def given_role() -> RunRole:
    """The role the parent flow gave this run; a run of its own when none did."""
    return _given.get() or RunRole()

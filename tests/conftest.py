"""Fixtures shared by unit and integration tests."""
from __future__ import annotations

import signal

import pytest


@pytest.fixture
def sigint_interrupts():
    """SIGINT raises KeyboardInterrupt, as Ctrl-C does at a terminal, however pytest was started.

    A shell without job control starts background commands with SIGINT ignored; Python then
    installs no handler and every child inherits the ignore, so an interrupt test would only
    show that. A handled signal is reset to its default at exec, so children started while
    this fixture is active get Python's usual Ctrl-C behaviour too.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)

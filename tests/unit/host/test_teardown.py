"""A teardown that fails while an error propagates is logged; the error that caused it is raised."""
from __future__ import annotations

import logging

import pytest

from specops.host.teardown import teardown_quietly


class Cause(RuntimeError):
    pass


def _stop():
    raise RuntimeError("ports still bound [8000]")


def test_the_original_error_survives_a_failing_teardown(caplog):
    caplog.set_level(logging.WARNING, logger="specops.host.teardown")
    with pytest.raises(Cause, match="could not bind"):
        try:
            raise Cause("could not bind its ports in 3 attempts")
        except BaseException:
            teardown_quietly(_stop, "stopping tritonserver")
            raise
    assert "stopping tritonserver failed while handling an earlier error" in caplog.text
    assert "ports still bound [8000]" in caplog.text


def test_an_interrupt_during_teardown_still_propagates():
    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        teardown_quietly(interrupted, "stopping")

"""The serve-to-teardown window in the RunResult: recorded when a run served, absent from records
stored before it existed (which still load)."""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from specops.report.tables import notes
from specops.report.writer import summary
from specops.results.model import RunResult, Window
from tests.results_factory import T0, run_result


def test_a_record_without_a_window_still_loads():
    stored = json.loads(run_result().model_dump_json())
    stored.pop("window")
    assert RunResult.model_validate(stored).window is None


def test_the_window_round_trips():
    window = Window(started_at=T0 + 10, finished_at=T0 + 70, slots=["gpu:h:GPU-1"], waited_s=4.5)
    result = run_result().model_copy(update={"window": window})
    assert RunResult.model_validate_json(result.model_dump_json()).window == window


def test_a_window_has_no_unknown_fields():
    with pytest.raises(ValidationError):
        Window(started_at=T0, finished_at=T0, slot="x")


def test_time_queued_for_the_slots_is_not_orchestration_overhead():
    plain = run_result()
    queued = plain.model_copy(update={"window": Window(started_at=T0 + 10, finished_at=T0 + 70,
                                                       slots=["gpu:h:GPU-1"], waited_s=40.0)})
    assert plain.overhead_s == plain.phases.overhead_s
    assert queued.overhead_s == pytest.approx(plain.overhead_s - 40.0)
    assert f"orchestration overhead {queued.overhead_s:.1f}s; queued 40.0s for its slots" in summary(queued)
    assert any("queued 40.0s for gpu:h:GPU-1" in line for line in notes(queued))
    assert "queued" not in summary(plain)

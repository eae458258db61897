"""The record step: a database that fails costs only the append, and the next run that reaches it appends both."""
from __future__ import annotations

import pytest
from prefect.logging import disable_run_logger

from specops.results import durable
from specops.results.durable import save_result
from specops.results.store import ResultsStore
from tasks.report import record_result
from tests.results_factory import T0, run_result


@pytest.fixture
def artifacts(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))
    return tmp_path / "artifacts"


def _kept(artifacts, run_id, started_at):
    result = run_result(run_id=run_id, started_at=started_at)
    result = result.model_copy(update={"run_dir": str(artifacts / "ngram-local" / run_id)})
    save_result(result, artifacts / "ngram-local" / run_id)
    return result


def test_a_failed_append_leaves_a_pointer_and_the_next_run_records_both(artifacts, monkeypatch, tmp_path):
    unusable = tmp_path / "a-directory-not-a-database"
    unusable.mkdir()
    monkeypatch.setenv("SPECOPS_RESULTS_URL", f"sqlite:///{unusable}")  # real sqlite: "unable to open"
    first = _kept(artifacts, "first", T0)
    with disable_run_logger():
        assert record_result.fn(first) is False
    assert durable.is_unrecorded(first.uid)

    good = f"sqlite:///{tmp_path / 'results.db'}"
    monkeypatch.setenv("SPECOPS_RESULTS_URL", good)
    second = _kept(artifacts, "second", T0 + 60)
    with disable_run_logger():
        assert record_result.fn(second) is True
    with ResultsStore.open(good) as store:
        assert [r.run_id for r in store.history()] == ["second", "first"]
    assert not durable.is_unrecorded(first.uid) and durable.unrecorded() == []

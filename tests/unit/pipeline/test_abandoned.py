"""The row the janitor writes for a killed run: FAILED (never ok) at the step its status named, INTERRUPTED where its
status said an interrupt had ended it there first, in the role its record kept, from the run directory alone; the
database that refuses it leaves the result pending."""
from __future__ import annotations

import pytest

from specops.pipeline.abandoned import abandoned_result, record_abandoned, run_profile
from specops.profile.loader import load_profile
from specops.results import durable
from specops.results.model import Status, Verdict
from specops.results.role import COMPARE
from specops.results.store import ResultsStore
from specops.run.rundir import RunDir
from tests.results_factory import run_result


@pytest.fixture
def killed(tmp_path, monkeypatch):
    """A run directory as create_run_dir leaves it, its status at `serve (speculative)`, and the janitor's record."""
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPECOPS_RESULTS_URL", f"sqlite:///{tmp_path / 'results.db'}")
    loaded = load_profile("ngram-local", ["benchmark.num_requests=3"])
    run = RunDir.create("ngram-local", "killed")
    run.write_yaml("profile.yaml", run_profile(loaded))
    run.mark_started()
    run.set_status("running", "serve", "speculative")
    return loaded, {"run_dir": str(run.path), "pid": 4242, "role": {"kind": COMPARE, "of": "cmp-1"}}


def test_a_killed_runs_result_is_failed_where_it_was_in_its_role_and_its_profile(killed):
    loaded, record = killed
    result = abandoned_result(record)
    assert (result.status, result.verdict) == (Status.FAILED, Verdict.FAILED)
    assert (result.failure.step, result.failure.variant) == ("serve", "speculative")
    assert "pid 4242" in result.failure.error and "(killed)" in result.failure.error
    assert (result.role.kind, result.role.of) == (COMPARE, "cmp-1")
    # the same profile, as it ran: its identity and the overrides it was given
    assert result.profile_sha256 == loaded.sha256 and result.overrides == ["benchmark.num_requests=3"]
    assert result.run_id == "killed" and result.variants == [] and result.speedup is None


def test_its_row_is_recorded_and_its_result_kept_in_the_run_directory(killed):
    _, record = killed
    assert record_abandoned(record).endswith("FAILED at serve, row recorded")
    with ResultsStore.open() as store:
        (row,) = store.history("ngram-local")
    assert row.status is Status.FAILED and row.failure.step == "serve"
    assert durable.read_result(durable.Path(record["run_dir"]) / durable.MANIFEST).uid == row.uid


def test_a_database_that_refuses_the_row_leaves_it_pending(killed, tmp_path, monkeypatch):
    _, record = killed
    unusable = tmp_path / "a-directory-not-a-database"
    unusable.mkdir()
    monkeypatch.setenv("SPECOPS_RESULTS_URL", f"sqlite:///{unusable}")
    assert "kept unrecorded" in record_abandoned(record)
    assert [str(p) for p in durable.unrecorded()] == [record["run_dir"]]


def test_a_run_killed_while_reporting_keeps_what_it_measured_and_its_ok_row_is_replaced(killed):
    _, record = killed
    run_dir = durable.Path(record["run_dir"])
    measured = run_result(status=Status.OK).model_copy(update={"run_dir": str(run_dir), "run_id": "killed"})
    durable.save_result(measured, run_dir)  # the run wrote its result and its row, then died in its report
    with ResultsStore.open() as store:
        store.append(measured)
    RunDir(run_dir).set_status("running", "report", "results")
    assert record_abandoned(record).endswith("FAILED at report, row recorded")
    with ResultsStore.open() as store:
        rows = store.history("ngram-local")
    assert [(r.uid, r.status, r.failure.step) for r in rows] == [(measured.uid, Status.FAILED, "report")]
    assert "(killed)" in rows[0].failure.error and rows[0].speedup.point == measured.speedup.point


@pytest.mark.parametrize("wrote_its_result", [False, True])
def test_a_run_killed_after_it_was_interrupted_is_interrupted_never_judged(killed, wrote_its_result):
    """SIGTERM (a cancellation, `make down`), then SIGKILL when the supervisor's grace ran out during the teardown or
    the report: the status said interrupted at once, and the row says so too (issue 51: FAILED, which the nightly
    judged and counted in a streak of failures)."""
    _, record = killed
    run_dir = durable.Path(record["run_dir"])
    if wrote_its_result:
        measured = run_result(status=Status.OK).model_copy(update={"run_dir": str(run_dir), "run_id": "killed"})
        durable.save_result(measured, run_dir)
    RunDir(run_dir).set_status("interrupted", "serve", "speculative", "TerminationSignal: 15")
    assert record_abandoned(record).endswith("INTERRUPTED at serve, row recorded")
    with ResultsStore.open() as store:
        (row,) = store.history("ngram-local")
    assert (row.status, row.verdict, row.failure.step) == (Status.INTERRUPTED, Verdict.INTERRUPTED, "serve")
    assert "after it was interrupted" in row.failure.error

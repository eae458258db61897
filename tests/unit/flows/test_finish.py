"""flows/finish: what a finished run leaves agrees everywhere. Its result is kept (manifest.json and the row) before
its report is written; a report that then fails makes the run FAILED at report in the manifest, the row and
status.json alike (issue 40: "a report that fails after the row leaves row ok and status failed"). Real files, a
real SQLite database; the Prefect tasks are called as plain functions, the artifacts publisher recorded."""
from __future__ import annotations

import json

import pytest
from prefect.logging import disable_run_logger

import flows.finish as finishing
from specops.results.durable import MANIFEST, read_result
from specops.results.model import Failure, Status, Verdict
from specops.results.store import ResultsStore
from specops.run.rundir import RunDir
from tests.results_factory import run_result


@pytest.fixture
def published(monkeypatch):
    shown = []
    monkeypatch.setattr(finishing, "publish_artifacts", lambda result, files: shown.append(result.status))
    return shown


@pytest.fixture
def run(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("SPECOPS_RESULTS_URL", f"sqlite:///{tmp_path / 'results.db'}")
    for name in ("save_result", "record_result", "write_report"):
        monkeypatch.setattr(finishing, name, getattr(finishing, name).fn)
    return RunDir.create("ngram-local", "r1")


def finished(result, run):
    result = result.model_copy(update={"run_dir": str(run.path), "run_id": run.run_id})
    with disable_run_logger():
        done = finishing.finish(result, run)
        finishing.set_final_status(run, done.result)
    with ResultsStore.open() as store:
        rows = [r for r in store.history("ngram-local") if r.run_dir == str(run.path)]
    status = json.loads((run.path / "status.json").read_text())
    return done, rows, read_result(run.path / MANIFEST), status


def test_a_report_that_fails_after_the_row_ends_the_run_failed_at_report_in_row_manifest_and_status(run, published):
    (run.path / "report.md").mkdir()  # the report cannot be written there: writing it fails (EISDIR)
    done, rows, manifest, status = finished(run_result(status=Status.OK), run)
    assert isinstance(done.error, OSError) and "report.md: Is a directory" in str(done.error) and done.report is None
    assert [(r.status, r.verdict, r.failure.step) for r in rows] == [(Status.FAILED, Verdict.FAILED, "report")]
    assert (manifest.status, manifest.failure.step) == (Status.FAILED, "report")
    assert (status["state"], status["step"]) == ("failed", "report") and "report.md: Is a directory" in status["error"]
    assert rows[0].speedup is not None and rows[0].speedup.point == pytest.approx(1.36)  # what was measured stays
    assert published == []


def test_a_failed_run_whose_report_fails_keeps_the_step_it_failed_at(run):
    (run.path / "report.md").mkdir()
    failed = run_result(status=Status.FAILED).model_copy(
        update={"failure": Failure(step="serve", variant="speculative", error="NotReady: not ready")})
    done, rows, manifest, status = finished(failed, run)
    assert isinstance(done.error, OSError)
    assert [(r.status, r.failure.step) for r in rows] == [(Status.FAILED, "serve")]
    assert (status["state"], status["step"]) == ("failed", "serve")


def test_a_run_whose_report_is_written_ends_ok_once_everywhere(run, published):
    done, rows, manifest, status = finished(run_result(status=Status.OK), run)
    assert done.error is None and done.report == run.path / "report.md" and done.report.is_file()
    assert [r.status for r in rows] == [Status.OK] and manifest.status is Status.OK
    assert status["state"] == "ok" and published == [Status.OK]
    assert "report" in json.loads((run.path / "timings.json").read_text())["phases"]  # status named the step


def test_a_flow_of_runs_none_of_which_measured_ends_failed_with_its_table():
    """Issue 51: a calibration whose every A/A run failed (a corrupt results database) wrote its table and ended
    Completed, and `specops calibrate` exited 0: a cron job read success."""
    failed, interrupted = run_result(status=Status.FAILED), run_result(status=Status.INTERRUPTED)
    state = finishing.table_or_failed("calibration of ngram-local", "the table", [failed, interrupted])
    assert state.is_failed() and "none of its 2 runs measured" in state.message
    none = state.data
    assert isinstance(none, finishing.NoneMeasured) and none.table == "the table"
    assert finishing.table_or_failed("comparison", "the table", [failed, run_result(status=Status.OK)]) == "the table"

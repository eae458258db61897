"""How a run's RunResult becomes the flow's final state: valid or unchecked -> Completed with the
result; INVALID -> Failed, the reasons in the state message, the result still carried."""
from __future__ import annotations

import pickle
from pathlib import Path

from flows.specdec import RunFailed, RunInvalid, final_state
from specops.results.model import Failure, Status, Verdict
from tests.results_factory import run_result

REPORT = Path("/work/artifacts/ngram-local/r1/report.md")


def test_a_valid_run_completes_with_its_result():
    result = run_result(status=Status.OK)
    assert final_state(result, REPORT) is result


def test_an_unchecked_run_completes_with_its_result():
    result = run_result(status=Status.OK).model_copy(update={"verdict": Verdict.UNCHECKED})
    assert final_state(result, REPORT) is result


def test_an_invalid_run_fails_with_its_reasons_and_keeps_its_result():
    result = run_result(status=Status.INVALID)
    state = final_state(result, REPORT)
    assert state.is_failed()
    assert state.message == (f"ngram-local INVALID: 2 of 8 outputs differ from the base's; report: {REPORT}")
    invalid = state.data
    assert isinstance(invalid, RunInvalid) and invalid.result is result and invalid.report == REPORT


def test_the_run_errors_survive_result_persistence():
    invalid = pickle.loads(pickle.dumps(RunInvalid(run_result(status=Status.INVALID), REPORT)))
    assert invalid.result.status is Status.INVALID and str(invalid).startswith("ngram-local INVALID: ")
    failed_result = run_result(status=Status.FAILED).model_copy(
        update={"failure": Failure(step="serve", variant="speculative", error="NotReady: not ready within 0.1s")})
    failed = pickle.loads(pickle.dumps(RunFailed(failed_result, REPORT)))
    assert str(failed) == (f"ngram-local FAILED at serve (speculative): NotReady: not ready within 0.1s; "
                           f"report: {REPORT}")

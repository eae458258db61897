"""The regression flow's own pieces: the suite is validated whole, a run is judged on the history as it
stood when it ended, a regression survives being persisted, and the alert reads as what happened."""
from __future__ import annotations

import pickle

import pytest

from flows.regression import RegressionFound, up_to, validate_suite
from specops.profile.loader import profiles_dir
from specops.regression.suite import SuiteEntry
from specops.regression.verdict import MetricVerdict, Verdict
from tasks.alert import alert_text
from tests.results_factory import run_result


def test_a_gpu_profile_given_by_path_is_refused_before_anything_runs():
    path = profiles_dir() / "eagle3-trtllm.yaml"
    with pytest.raises(ValueError, match=r"suite\[1\].profile: .*eagle3-trtllm.yaml needs a GPU worker"):
        validate_suite.fn([SuiteEntry(profile="ngram-local"), SuiteEntry(profile=str(path))])
    loaded = validate_suite.fn([SuiteEntry(profile="ngram-local"), SuiteEntry(profile="eagle3-trtllm")])
    assert [lp.profile.name for lp in loaded] == ["ngram-local", "eagle3-trtllm"]


def test_a_bad_entry_fails_the_whole_suite_and_an_empty_one_is_refused():
    with pytest.raises(Exception, match="no-such-profile"):
        validate_suite.fn([SuiteEntry(profile="ngram-local"), SuiteEntry(profile="no-such-profile")])
    with pytest.raises(ValueError, match="suite is empty"):
        validate_suite.fn([])
    with pytest.raises(ValueError, match="extra"):
        SuiteEntry(profile="ngram-local", override=["x=1"])


def test_the_run_is_judged_on_the_history_up_to_it():
    runs = [run_result().model_copy(update={"run_id": f"r{i}", "started_at": float(i)}) for i in range(4)]
    assert [r.run_id for r in up_to(runs, "r2", "ngram-local")] == ["r0", "r1", "r2"]
    with pytest.raises(RuntimeError, match="run r9 is not in the results database"):
        up_to(runs, "r9", "ngram-local")


def test_a_regression_found_survives_pickling_and_names_what_regressed():
    verdict = MetricVerdict(profile="ngram-local", metric="mean_acceptance_length", verdict=Verdict.REGRESSION,
                            value=1.8, baseline=2.4, band=(2.3, 2.5), threshold=0.95, run_uid="b" * 32,
                            baseline_uids=["a" * 32], violating_uids=["c" * 32, "b" * 32])
    found = pickle.loads(pickle.dumps(RegressionFound([verdict])))
    assert str(found) == "1 regression(s): ngram-local mean_acceptance_length"
    subject, body = alert_text({"profile": "ngram-local", "metric": "mean_acceptance_length", "value": 1.8,
                                "baseline": 2.4, "threshold": 0.95, "runs": ["c" * 32, "b" * 32]})
    assert subject == "specops regression: ngram-local mean_acceptance_length"
    assert "1.8 against a baseline of 2.4" in body and "c" * 32 in body

"""The policy: thresholds validated against the metric registry, with messages naming what is allowed."""
from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from specops.regression.metrics import METRICS, UnknownMetric, metric, metric_values
from specops.regression.policy import RegressionPolicy
from tests.unit.regression.runs import run


def test_defaults_and_overrides():
    policy = RegressionPolicy(thresholds={"speedup": 0.9, "acceptance_rate_pos": 0.8, "acceptance_rate_pos2": 0.7})
    assert [RegressionPolicy().threshold(n) for n in METRICS] == [0.95, 0.95, 0.95, 1.10]
    assert RegressionPolicy().threshold("acceptance_rate_pos5") == 0.90
    assert policy.threshold("speedup") == 0.9 and policy.threshold("output_tokens_per_s") == 0.95
    assert policy.threshold("acceptance_rate_pos1") == 0.8  # the family's
    assert policy.threshold("acceptance_rate_pos2") == 0.7  # its own wins


def test_an_unknown_metric_names_the_allowed_ones():
    with pytest.raises(ValidationError) as err:
        RegressionPolicy(thresholds={"sped_up": 0.9})
    text = str(err.value)
    assert "thresholds" in text and "unknown metric 'sped_up'" in text
    for name in ("speedup", "output_tokens_per_s", "mean_acceptance_length", "itl_p50_ms", "acceptance_rate_pos<i>"):
        assert name in text


@pytest.mark.parametrize(("name", "value", "says"), [
    ("speedup", 1.05, "in (0, 1]"), ("acceptance_rate_pos", 0.0, "in (0, 1]"), ("itl_p50_ms", 0.9, ">= 1")])
def test_a_threshold_on_the_wrong_side_of_1_is_refused(name, value, says):
    with pytest.raises(ValidationError, match=re.escape(f"thresholds.{name} = {value}: ") + ".*" + re.escape(says)):
        RegressionPolicy(thresholds={name: value})


def test_inconsistent_counts_and_unknown_fields_are_refused():
    with pytest.raises(ValidationError, match=r"min_baseline_runs \(8\) exceeds baseline_runs \(7\)"):
        RegressionPolicy(min_baseline_runs=8)
    with pytest.raises(ValidationError, match="extra"):
        RegressionPolicy(baseline=3)


def test_metric_values_reads_each_registered_metric():
    values = metric_values(run(0, speedup=1.3, tok_s=20.0, accept_len=2.2, itl_ms=45.0, positions=[0.7, 0.3]))
    assert values == pytest.approx({"speedup": 1.3, "output_tokens_per_s": 20.0, "mean_acceptance_length": 2.2,
                                    "itl_p50_ms": 45.0, "acceptance_rate_pos1": 0.7, "acceptance_rate_pos2": 0.3})
    assert metric("acceptance_rate_pos1").label == "acceptance rate, draft position 1"  # the first, as in the report
    with pytest.raises(UnknownMetric, match="positions number from 1"):
        metric("acceptance_rate_pos0")

"""The regression rule's noise band on the log scale, the runs a baseline still needs, and absolute
speed judged only on a steady host (issue 27: a linear band of -4.6..27.9 tokens/s called a 53% drop ok)."""
from __future__ import annotations

import math
import random

import pytest

from specops.regression.metrics import metric
from specops.regression.policy import RegressionPolicy
from specops.regression.table import verdict_table
from specops.regression.verdict import (
    AA_BAND,
    COUNT_BAND,
    LOG_FLOOR,
    Verdict,
    evaluate,
    log_band,
    series,
)
from specops.results.speedup import wilson
from tests.unit.regression.runs import aa_run, baseline, run

POLICY = RegressionPolicy()


def verdicts(history, policy=POLICY) -> dict[str, object]:
    return {v.metric: v for v in evaluate(history, policy)}


def test_bands_never_go_below_zero_and_hold_their_baseline_over_random_histories():
    rng = random.Random(27)
    for _ in range(2000):
        # anything from steady to wildly spread, zeros included (an acceptance rate can be 0)
        scale, spread = 10 ** rng.uniform(-2, 3), rng.uniform(0, 3)
        values = [max(0.0, scale * math.exp(rng.gauss(0, spread))) if rng.random() > 0.1 else 0.0
                  for _ in range(rng.randint(1, 9))]
        base, (low, high) = log_band(values, rng.uniform(0, 6))
        assert 0 < low <= base <= high, (values, low, base, high)
        floored = [max(v, LOG_FLOOR) for v in values]
        assert min(floored) * (1 - 1e-12) <= base <= max(floored) * (1 + 1e-12)


def test_the_band_is_a_factor_the_same_at_every_scale():
    values = [1.2, 1.4, 1.6, 1.3, 1.5]
    base, (low, high) = log_band(values, 3.0)
    base10, (low10, high10) = log_band([10 * v for v in values], 3.0)
    assert (base10, low10, high10) == pytest.approx((10 * base, 10 * low, 10 * high))
    assert base / low == pytest.approx(high / base)  # symmetric as a ratio, not as a difference


def test_the_issues_linear_band_went_below_zero_and_the_log_band_does_not():
    # Two runs 8.0 and 15.3 tokens/s gave median 11.65 +- 3 x 1.4826 x 3.65 = -4.6..27.9 on the linear scale.
    base, (low, high) = log_band([8.0, 15.3], 3.0)
    assert low > 0 and low == pytest.approx(base * (8.0 / 15.3) ** (0.5 * 3 * 1.4826))


@pytest.mark.parametrize("name", ["speedup", "output_tokens_per_s", "mean_acceptance_length", "itl_p50_ms",
                                  "acceptance_rate_pos1", "acceptance_rate_pos2"])
def test_a_50_percent_drop_after_noisy_nights_is_a_regression(name):
    rng = random.Random(name)
    worse = 0.5 if metric(name).higher_is_better else 2.0  # half the speed, twice the latency

    def values() -> dict:
        noise = lambda: math.exp(rng.gauss(0, 0.05))  # noqa: E731 - 5% night-to-night noise
        return dict(speedup=1.4 * noise(), tok_s=22.0 * noise(), accept_len=2.5 * noise(), itl_ms=40.0 / noise(),
                    positions=[0.8 * noise(), 0.5 * noise()])

    nights = [run(d, **values()) for d in range(7)]
    dropped = [run(7 + d, **{**values(), **_worse(name, worse, values())}) for d in range(2)]
    judged = verdicts([*nights, *dropped])[name]
    assert judged.verdict is Verdict.REGRESSION, judged.text()
    assert judged.band[0] > 0


def _worse(name: str, factor: float, fresh: dict) -> dict:
    """The run's values with only `name` moved by factor."""
    field = {"speedup": "speedup", "output_tokens_per_s": "tok_s", "mean_acceptance_length": "accept_len",
             "itl_p50_ms": "itl_ms"}.get(name)
    if field:
        return {field: fresh[field] * factor}
    i = int(name.removeprefix("acceptance_rate_pos")) - 1  # positions number from 1
    positions = list(fresh["positions"])
    positions[i] *= factor
    return {"positions": positions}


def test_an_acceptance_rate_that_falls_to_zero_is_caught():
    history = [*baseline(3, positions=[0.8, 0.5]), run(3, positions=[0.8, 0.0]), run(4, positions=[0.8, 0.0])]
    judged = verdicts(history)["acceptance_rate_pos2"]
    assert judged.verdict is Verdict.REGRESSION and judged.band[0] > 0


def test_a_rate_with_a_zero_baseline_gets_a_band_of_counting_noise_never_zero_width():
    # issue 39: three 0% runs gave `acceptance_rate_pos3 improved 0.1795 0.001 0.001-0.001`
    zeros = baseline(3, positions=[0.8, 0.0])  # 100 drafted steps each
    judged = verdicts([*zeros, run(3, positions=[0.8, 0.18])])["acceptance_rate_pos2"]
    assert judged.band == pytest.approx((0.0, wilson(0, 300)[1])) and judged.band[1] > 0.01
    assert judged.verdict is Verdict.IMPROVED  # 18% of steps is far past what 0 of 300 allows
    # one accepted step in 100 is within what 0 of 300 allows; the log band alone called it a 10x improvement
    assert verdicts([*zeros, run(3, positions=[0.8, 0.01])])["acceptance_rate_pos2"].verdict is Verdict.OK
    assert series([*zeros, run(3, positions=[0.8, 0.0])], POLICY)["acceptance_rate_pos2"][-1].band_kind == COUNT_BAND


def test_insufficient_data_says_how_many_more_runs_the_baseline_needs():
    judged = verdicts(baseline(2))["speedup"]  # one run before the newest; three are needed
    assert judged.verdict is Verdict.INSUFFICIENT and judged.runs_needed == 2
    assert judged.text().endswith("needs 2 more runs)")
    assert verdicts(baseline(3))["speedup"].runs_needed == 1
    assert verdicts(baseline(4))["speedup"].runs_needed is None
    assert "needs 1 more run" in verdict_table(evaluate(baseline(3), POLICY))
    assert verdicts(baseline(6), RegressionPolicy(baseline_runs=7, min_baseline_runs=7))["speedup"].runs_needed == 2


def test_absolute_speed_is_not_judged_when_the_hosts_own_speed_moved():
    # The whole host ran at half speed: both arms halved, the speedup held.
    slow_host = [*baseline(3), run(3, tok_s=11.0, itl_ms=80.0, host_tok_s=8.0)]
    judged = verdicts(slow_host)
    for name in ("output_tokens_per_s", "itl_p50_ms"):
        assert judged[name].verdict is Verdict.HOST_DRIFT, judged[name].text()
        assert "x0.5 " in judged[name].note and judged[name].note in judged[name].text()
    assert judged["speedup"].verdict is Verdict.OK
    # A host known to be dedicated judges them as they are.
    always = verdicts(slow_host, RegressionPolicy(judge_absolute="always"))
    assert always["output_tokens_per_s"].verdict is always["itl_p50_ms"].verdict is Verdict.SUSPICIOUS


def test_absolute_speed_is_judged_when_the_host_held_steady():
    steady = [*baseline(3), run(3, tok_s=11.0, host_tok_s=16.3)]  # the base arm within 5%: speculation slowed
    assert verdicts(steady)["output_tokens_per_s"].verdict is Verdict.SUSPICIOUS



def test_host_drift_is_judged_once_for_the_run_not_per_metric():
    # The issue's slow host: 7% slower, it was host-drift for tokens/s (threshold 0.95) and suspicious for ITL
    # (1.10), one host told two ways. Judged once, at the tightest absolute threshold, both are host-drift alike.
    slow = verdicts([*baseline(3), run(3, tok_s=20.0, itl_ms=60.0, host_tok_s=16.0 / 1.07)])
    tok_s, itl = slow["output_tokens_per_s"], slow["itl_p50_ms"]
    assert tok_s.verdict is itl.verdict is Verdict.HOST_DRIFT and tok_s.note == itl.note
    assert "moved x0.935 against its 3 baseline runs' (past x0.95" in itl.note
    assert slow["speedup"].verdict is Verdict.OK  # the speedup is still judged
    # the policy's tightest absolute threshold sets the tolerance for all of them
    loose = RegressionPolicy(thresholds={"output_tokens_per_s": 0.90})
    assert verdicts([*baseline(3), run(3, itl_ms=60.0, host_tok_s=16.0 / 1.07)], loose)["itl_p50_ms"].verdict \
        is Verdict.SUSPICIOUS


def test_a_host_drift_run_breaks_no_streak_and_joins_later_baselines():
    history = [*baseline(3), run(3, tok_s=11.0, host_tok_s=8.0)]
    points = series(history, POLICY)["output_tokens_per_s"]
    assert not points[-1].violates and points[-1].unjudged
    # the host stays at half speed: once its runs are the baseline, the absolute figures are judged again
    later = [*history, *(run(4 + d, tok_s=11.0, host_tok_s=8.0) for d in range(7))]
    assert verdicts(later, RegressionPolicy(baseline_runs=3))["output_tokens_per_s"].verdict is Verdict.OK


def test_aa_runs_are_never_judged_nor_a_baseline_and_set_the_speedups_noise_floor():
    steady = [run(d, speedup=1.40) for d in range(5)]  # a baseline with no spread at all
    dipped = run(5, speedup=1.30)  # -7%: past the 0.95 threshold, outside a zero-width band
    assert verdicts([*steady, dipped])["speedup"].verdict is Verdict.SUSPICIOUS
    # A/A runs on this host stray by ~5%: a 7% move is within 3 x that spread, so not a change
    aa = [aa_run(0.1 * i, p) for i, p in enumerate([0.95, 1.05, 0.97, 1.04, 1.0])]
    judged = verdicts([*aa, *steady, dipped])["speedup"]
    assert judged.verdict is Verdict.OK and judged.band[0] < 1.30 < 1.40 < judged.band[1]
    assert series([*aa, *steady, dipped], POLICY)["speedup"][-1].band_kind == AA_BAND  # the trend's legend says so
    assert judged.baseline_uids == [r.uid for r in steady]  # no A/A run in the baseline
    # fewer A/A runs than min_baseline_runs: no floor; exactly min_baseline_runs of them: the floor
    assert verdicts([*aa[:2], *steady, dipped])["speedup"].verdict is Verdict.SUSPICIOUS
    assert POLICY.min_baseline_runs == 3 and verdicts([*aa[:3], *steady, dipped])["speedup"].verdict is Verdict.OK
    # the floor is the speedup's alone; an A/A run as the newest is not judged
    assert verdicts([*aa, *steady, run(5, accept_len=2.0)])["mean_acceptance_length"].verdict is Verdict.SUSPICIOUS
    assert evaluate(aa, POLICY) == [] and evaluate([*steady, aa_run(6, 0.5)], POLICY)[0].run_uid == steady[-1].uid

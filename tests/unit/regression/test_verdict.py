"""The regression rule on runs with chosen values: baseline, streaks, the noise band, hardware, window."""
from __future__ import annotations

import pytest

from specops.regression.policy import RegressionPolicy
from specops.regression.runs import baseline_key, hardware_key, profile_runs
from specops.regression.table import verdict_table
from specops.regression.verdict import Verdict, evaluate, regressions
from specops.results.model import Lossless, Status
from specops.results.role import SWEEP_CELL, UPGRADE, RunRole
from tests.unit.regression.runs import baseline, run

POLICY = RegressionPolicy()


def verdicts(history, policy=POLICY) -> dict[str, object]:
    return {v.metric: v for v in evaluate(history, policy)}


def test_a_baseline_forms_once_min_baseline_runs_runs_precede():
    assert {v.verdict for v in evaluate(baseline(3), POLICY)} == {Verdict.INSUFFICIENT}  # 2 runs before it
    judged = verdicts(baseline(4))
    assert {v.verdict for v in judged.values()} == {Verdict.OK}
    assert judged["speedup"].baseline == pytest.approx(1.40)
    assert len(judged["speedup"].baseline_uids) == 3


def test_one_degraded_run_is_suspicious_two_are_a_regression():
    history = [*baseline(3), run(3, speedup=1.20)]
    first = verdicts(history)["speedup"]
    assert first.verdict is Verdict.SUSPICIOUS and first.violating_uids == [history[-1].uid]
    assert verdicts(history)["mean_acceptance_length"].verdict is Verdict.OK  # only speedup moved
    history.append(run(4, speedup=1.21))
    second = verdicts(history)["speedup"]
    assert second.verdict is Verdict.REGRESSION
    assert second.violating_uids == [history[-2].uid, history[-1].uid]  # the streak, oldest first
    assert [v.metric for v in regressions(evaluate(history, POLICY))] == ["speedup"]


def test_a_good_run_between_two_bad_ones_breaks_the_streak():
    history = [*baseline(3), run(3, speedup=1.20), run(4), run(5, speedup=1.20)]
    assert verdicts(history)["speedup"].verdict is Verdict.SUSPICIOUS


def test_a_degraded_run_above_the_threshold_is_ok_and_a_big_gain_is_improved():
    assert verdicts([*baseline(3), run(3, speedup=1.34)])["speedup"].verdict is Verdict.OK  # 1.34 >= 1.40 x 0.95
    assert verdicts([*baseline(3), run(3, speedup=1.60)])["speedup"].verdict is Verdict.IMPROVED  # > 1.40 / 0.95
    assert verdicts([*baseline(3), run(3, speedup=1.46)])["speedup"].verdict is Verdict.OK


def test_lower_is_better_for_inter_token_latency():
    assert verdicts([*baseline(3), run(3, itl_ms=45.0)])["itl_p50_ms"].verdict is Verdict.SUSPICIOUS  # > 40 x 1.1
    assert verdicts([*baseline(3), run(3, itl_ms=43.0)])["itl_p50_ms"].verdict is Verdict.OK
    assert verdicts([*baseline(3), run(3, itl_ms=30.0)])["itl_p50_ms"].verdict is Verdict.IMPROVED


def test_the_noise_band_suppresses_a_violation_within_the_baselines_own_spread():
    noisy = [run(d, speedup=s) for d, s in enumerate([1.2, 1.4, 1.6, 1.3, 1.5])]  # log scale: MAD ln(1.4/1.3)
    history = [*noisy, run(5, speedup=1.30)]  # below 1.40 x 0.95, inside 1.4 x (1.4/1.3)^(+-3 x 1.4826)
    judged = verdicts(history)["speedup"]
    assert judged.verdict is Verdict.OK
    assert judged.band == pytest.approx((1.4 * (1.3 / 1.4) ** 4.4478, 1.4 * (1.4 / 1.3) ** 4.4478))
    assert verdicts(history, RegressionPolicy(noise_mads=0))["speedup"].verdict is Verdict.SUSPICIOUS
    assert verdicts([*noisy, run(5, speedup=0.9)])["speedup"].verdict is Verdict.SUSPICIOUS  # outside the band


def test_the_baseline_is_the_median_of_the_last_baseline_runs_runs():
    # 1.36 is within 5% of 1.40: those runs do not violate, so they join the baseline
    history = [*(run(d, speedup=1.40) for d in range(3)), *(run(d, speedup=1.36) for d in range(3, 6)), run(6)]
    judged = verdicts(history, RegressionPolicy(baseline_runs=3))["speedup"]
    assert judged.verdict is Verdict.OK and judged.baseline == pytest.approx(1.36)
    assert judged.baseline_uids == [r.uid for r in history[3:6]]
    # six runs: the median on the log scale is the geometric mean of the middle two
    assert verdicts(history, RegressionPolicy(baseline_runs=7))["speedup"].baseline == pytest.approx((1.40 * 1.36) ** 0.5)


def test_a_violating_streak_stays_out_of_the_baselines_after_it():
    """A drop that stays down stays a regression: the bad nights are judged against the good ones."""
    history = [*(run(d, speedup=2.0) for d in range(3)), *(run(d, speedup=1.4) for d in range(3, 7))]
    judged = verdicts(history, RegressionPolicy(baseline_runs=3))["speedup"]
    assert judged.verdict is Verdict.REGRESSION and judged.baseline == pytest.approx(2.0)
    assert judged.baseline_uids == [r.uid for r in history[:3]]
    assert judged.violating_uids == [r.uid for r in history[3:]]
    recovered = verdicts([*history, run(7, speedup=1.98)], RegressionPolicy(baseline_runs=3))["speedup"]
    assert recovered.verdict is Verdict.OK and recovered.baseline == pytest.approx(2.0)


def test_runs_on_other_hardware_are_not_in_the_baseline():
    assert hardware_key(run(0)) == "cpu: AMD EPYC 7B13 x2"
    assert hardware_key(run(0, gpus=["NVIDIA H100", "NVIDIA H100"])) == "gpu: 2x NVIDIA H100"
    other_cpu = [*baseline(3, cpu="Intel Xeon 8481C", speedup=2.0), run(3, speedup=1.2)]
    assert verdicts(other_cpu)["speedup"].verdict is Verdict.INSUFFICIENT
    gpus = [*(run(d, gpus=["NVIDIA H100"], speedup=2.0) for d in range(3)),
            *(run(d, gpus=["NVIDIA A100"]) for d in range(3, 6)), run(6, gpus=["NVIDIA A100"], speedup=1.39)]
    judged = verdicts(gpus)["speedup"]
    assert judged.verdict is Verdict.OK and judged.baseline == pytest.approx(1.40)
    assert judged.baseline_uids == [r.uid for r in gpus[3:6]]


def test_runs_of_another_benchmark_shape_are_not_in_the_baseline():
    def at(result, **bench):
        return result.model_copy(update={"benchmark": result.benchmark.model_copy(update=bench)})

    assert baseline_key(run(0)) == "cpu: AMD EPYC 7B13 x2; genai-perf kserve humaneval, concurrency 1, 128 tokens"
    swept = [*(at(run(d, speedup=0.8), concurrency=4) for d in range(3)), run(3)]  # a sweep's cells, say
    assert verdicts(swept)["speedup"].verdict is Verdict.INSUFFICIENT
    more_requests = [*(at(r, num_requests=64, rounds=3) for r in baseline(3)), run(3, speedup=1.2)]
    assert verdicts(more_requests)["speedup"].verdict is Verdict.SUSPICIOUS  # precision only: still comparable


def test_the_window_excludes_old_runs():
    history = [*baseline(3), run(40, speedup=1.20)]  # the baseline is 38-40 days old
    assert verdicts(history)["speedup"].verdict is Verdict.INSUFFICIENT
    assert verdicts(history, RegressionPolicy(window_days=45))["speedup"].verdict is Verdict.SUSPICIOUS


def test_an_invalid_run_is_a_lossless_regression_at_once_and_never_a_baseline():
    invalid = run(3, status=Status.INVALID)
    judged = evaluate([*baseline(3), invalid], POLICY)
    assert [(v.metric, v.verdict) for v in judged] == [("lossless", Verdict.REGRESSION)]
    assert judged[0].value == pytest.approx(6 / 8) and judged[0].violating_uids == [invalid.uid]
    broken = run(3).model_copy(update={"lossless": Lossless(compared=8, mismatches=0, reasons=["empty output"])})
    assert [v.metric for v in regressions(evaluate([*baseline(3), broken], POLICY))] == ["lossless"]
    poisoned = [run(d, status=Status.INVALID, speedup=3.0) for d in range(3)] + [run(3)]
    assert verdicts(poisoned)["speedup"].verdict is Verdict.INSUFFICIENT


def test_failed_runs_are_suspicious_once_a_regression_twice_and_skipped_by_metric_streaks():
    one = evaluate([*baseline(3), run(3, status=Status.FAILED)], POLICY)
    assert [(v.metric, v.verdict) for v in one] == [("run", Verdict.SUSPICIOUS)]
    two = [*baseline(3), run(3, status=Status.FAILED), run(4, status=Status.FAILED)]
    assert [(v.metric, v.verdict, len(v.violating_uids)) for v in evaluate(two, POLICY)] == [
        ("run", Verdict.REGRESSION, 2)]
    around = [*baseline(3), run(3, speedup=1.2), run(4, status=Status.FAILED), run(5, speedup=1.2)]
    assert verdicts(around)["speedup"].verdict is Verdict.REGRESSION


def test_an_interrupted_run_is_never_judged_and_neither_starts_nor_breaks_a_failure_streak():
    assert evaluate([*baseline(3), run(3, status=Status.INTERRUPTED)], POLICY) == []
    twice = [*baseline(3), run(3, status=Status.INTERRUPTED), run(4, status=Status.INTERRUPTED)]
    assert evaluate(twice, POLICY) == []
    streak = [*baseline(3), run(3, status=Status.FAILED), run(4, status=Status.INTERRUPTED),
              run(5, status=Status.FAILED)]
    assert [(v.metric, v.verdict, len(v.violating_uids)) for v in evaluate(streak, POLICY)] == [
        ("run", Verdict.REGRESSION, 2)]


def test_per_position_acceptance_rates_are_judged_each_with_its_threshold():
    history = [*baseline(3, positions=[0.8, 0.5]), run(3, positions=[0.75, 0.4])]
    judged = verdicts(history)
    assert judged["acceptance_rate_pos1"].verdict is Verdict.OK  # 0.75 >= 0.8 x 0.90
    assert judged["acceptance_rate_pos2"].verdict is Verdict.SUSPICIOUS  # 0.4 < 0.5 x 0.90
    assert judged["acceptance_rate_pos2"].threshold == 0.90
    strict = verdicts(history, RegressionPolicy(thresholds={"acceptance_rate_pos": 0.99}))
    assert strict["acceptance_rate_pos1"].verdict is Verdict.SUSPICIOUS
    assert list(judged)[:4] == ["speedup", "output_tokens_per_s", "mean_acceptance_length", "itl_p50_ms"]


def test_acceptance_length_regresses_like_the_issue_asks():
    history = [*baseline(3), run(3, accept_len=1.5), run(4, accept_len=1.4)]
    assert verdicts(history)["mean_acceptance_length"].verdict is Verdict.REGRESSION


def test_history_order_does_not_matter_and_profiles_must_not_mix():
    history = [*baseline(3), run(3, speedup=1.2), run(4, speedup=1.2)]
    assert verdicts(list(reversed(history)))["speedup"].verdict is Verdict.REGRESSION
    assert evaluate([], POLICY) == []
    with pytest.raises(ValueError, match="one profile's runs; got eagle3-vllm, ngram-local"):
        evaluate([run(0), run(1).model_copy(update={"profile": "eagle3-vllm"})], POLICY)


def test_verdict_table_and_text():
    history = [*baseline(3), run(3, speedup=1.2), run(4, speedup=1.2)]
    table = verdict_table(evaluate(history, POLICY))
    lines = table.splitlines()
    assert lines[0].split() == ["profile", "metric", "verdict", "value", "baseline", "band", "threshold", "streak",
                                "note"]
    speedup = next(line for line in lines if " speedup " in line)
    assert speedup.split()[:8] == ["ngram-local", "speedup", "regression", "1.2", "1.4", "1.4-1.4", "x0.95", "2"]
    # a band of no width says the rule that then holds (the issue: mean_acceptance_length's, unexplained)
    note = ("deterministic: its 3 baseline runs all measured 1.4, so there is no noise band: any move past the "
            "threshold x0.95 is flagged")
    assert speedup.endswith(note)
    assert verdict_table([]) == "no verdicts (no runs)"
    assert regressions(evaluate(history, POLICY))[0].text() == (
        f"ngram-local speedup: regression (1.2 vs baseline 1.4, threshold x0.95, last 2 runs, {note})")


def test_a_deterministic_metric_says_its_rule_and_a_noisy_one_does_not():
    # greedy n-gram acceptance repeats exactly: every baseline run measured 2.5 tokens/step
    history = [*baseline(3, speedup=1.4), run(3, speedup=1.38), run(4, speedup=1.45, accept_len=2.4)]
    history = [r.model_copy(update={"speedup": r.speedup.model_copy(update={"point": p})})
               for r, p in zip(history, [1.35, 1.42, 1.40, 1.38, 1.45])]
    judged = {v.metric: v for v in evaluate(history, POLICY)}
    length = judged["mean_acceptance_length"]
    assert length.verdict is Verdict.OK and length.band == (2.5, 2.5)  # -4%: within x0.95
    assert length.note.startswith("deterministic: its 4 baseline runs all measured 2.5") and "x0.95" in length.note
    assert judged["speedup"].note is None  # its baseline runs differ: a noise band, nothing to explain


@pytest.mark.parametrize("role", [RunRole(kind=SWEEP_CELL), RunRole(kind=UPGRADE, off_engine=True)])
def test_sweep_cells_and_upgrade_sides_are_left_out_of_the_profiles_history(role):
    """An upgrade check's side serves the profile on another engine, a sweep cell at another K or load: two slow
    ones in a row must not be called a regression of the profile (tasks/regression.py reads the history through
    profile_runs), while the same two runs as runs of their own are one."""
    slow = [run(day, speedup=0.7) for day in (4, 5)]
    plain = [*baseline(4), *slow]
    assert verdicts(profile_runs(plain))["speedup"].verdict is Verdict.REGRESSION
    marked = [*baseline(4), *(r.model_copy(update={"role": role}) for r in slow)]
    assert profile_runs(marked) == marked[:4]
    judged = verdicts(profile_runs(marked))["speedup"]
    assert judged.verdict is Verdict.OK and judged.baseline == pytest.approx(1.40)


def _with_categories(result, speedups: dict[str, float]):
    from specops.results.categories import CategoryFigures, WorkloadRecord
    from specops.results.paired import Speedup

    figures = [CategoryFigures(category=c, prompts=4, weight=0.5, accepted_per_step=2.5,
                               speedup=Speedup(point=s, low=s * 0.9, high=s * 1.1, prompts=4, rounds=1, resampled="t"))
               for c, s in speedups.items()]
    return result.model_copy(update={"workload": WorkloadRecord(label="spec-bench", api="chat", api_note="",
                                                                categories=figures)})


def test_a_drop_in_one_category_while_the_others_hold_is_reported_as_that_category():
    steady = {"code": 1.8, "chat": 1.1}
    history = [_with_categories(run(d), steady) for d in range(3)]
    history += [_with_categories(run(d), {"code": 1.3, "chat": 1.1}) for d in (3, 4)]  # code drops, chat holds
    judged = verdicts(history)
    assert judged["speedup[code]"].verdict is Verdict.REGRESSION and judged["speedup[chat]"].verdict is Verdict.OK
    assert judged["speedup"].verdict is Verdict.OK  # the run's own overall figure did not move here
    assert [v.metric for v in regressions(evaluate(history, POLICY))] == ["speedup[code]"]
    assert "speedup[code]" in verdict_table(evaluate(history, POLICY))
    assert RegressionPolicy(thresholds={"speedup[code]": 0.9}).threshold("speedup[code]") == 0.9


def test_a_primed_drafter_caches_run_is_never_judged_nor_a_baseline():
    """Issue 51: a suffix run whose cache held the measured prompts' outputs (a replay no user sees) entered the
    regression baselines and was judged as any other run."""
    from specops.results.metrics import DrafterCache

    cache = DrafterCache(on=True, max_cached_requests=10000, primed=["rounds 2: the second round replays the first"])
    primed = run(3, speedup=5.0).model_copy(update={"drafter_cache": cache})
    assert evaluate([*baseline(3), primed], POLICY) == []  # the newest, never judged
    judged = {v.metric: v for v in evaluate([*baseline(3), primed, run(4)], POLICY)}
    assert primed.uid not in judged["speedup"].baseline_uids and judged["speedup"].verdict is Verdict.OK

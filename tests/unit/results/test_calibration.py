"""A/A calibration summaries: coverage of 1.00x counted right, the spread on the log scale, failed runs named."""
from __future__ import annotations

import math
import random

import pytest

from specops.results.calibration import Calibration, aa_spread, covers_one, format_calibration, is_calibration
from specops.results.model import Status
from specops.results.paired import Speedup
from specops.results.role import CALIBRATE, RunRole
from tests.results_factory import T0, run_result


def aa(point: float, half: float = 0.05, status: Status = Status.OK, i: int = 0):
    result = run_result(speedup=point, status=status, started_at=T0 + 600 * i).model_copy(update={"method": "none", "role": RunRole(kind=CALIBRATE)})
    if result.speedup:
        result = result.model_copy(update={"speedup": result.speedup.model_copy(
            update={"low": point - half, "high": point + half})})
    return result


def test_coverage_counts_the_intervals_that_contain_one_and_only_those():
    results = [aa(1.00), aa(0.97), aa(1.04, half=0.03), aa(0.90), aa(1.12), aa(1.0, status=Status.FAILED)]
    calibration = Calibration("ngram-local", results)
    # 1.00 (0.95-1.05) and 0.97 (0.92-1.02) contain it; 1.04 (1.01-1.07), 0.90 and 1.12 do not
    assert len(calibration.measured) == 5 and calibration.covering == 2
    text = format_calibration(calibration)
    assert "2 of 5 95% intervals contain 1.00x (about 4.8 expected)" in text
    assert text.count("MISSES 1.00x") == 3 and "FAILED (serve)" in text
    assert "design: " in text and "round blocks; interval over " in text
    assert covers_one(Speedup(point=1.0, low=1.0, high=1.2, prompts=4, rounds=1, resampled="prompts"))
    assert not covers_one(Speedup(point=1.1, low=None, high=None, prompts=4, rounds=1, resampled="prompts"))


def test_the_spread_is_a_robust_sd_of_log_speedups_around_one():
    rng = random.Random(5)
    sigma = 0.04
    points = [math.exp(rng.gauss(0, sigma)) for _ in range(4000)]
    assert aa_spread(points) == pytest.approx(sigma, rel=0.05)  # what a normal noise of sd sigma gives
    assert aa_spread([1 / 1.1, 1.1]) == pytest.approx(1.4826 * math.log(1.1))  # symmetric: 0.91x strays like 1.10x


def test_a_calibration_with_nothing_measured_says_so_and_aa_runs_are_told_apart():
    calibration = Calibration("ngram-local", [aa(1.0, status=Status.FAILED)])
    assert calibration.spread is None and "no run measured a speedup with an interval" in format_calibration(
        calibration)
    assert is_calibration(aa(1.0)) and not is_calibration(run_result())


def test_runs_without_an_interval_are_listed_as_such_with_the_reason_not_as_misses():
    why = "none: one round block per variant is one unit of noise; set benchmark.rounds >= 2"
    blocks = [aa(p, i=i).model_copy(update={"speedup": aa(p).speedup.model_copy(
        update={"low": None, "high": None, "rounds": 1, "resampled": why})}) for i, p in enumerate((1.1, 0.95))]
    text = format_calibration(Calibration("ngram-local", blocks))
    lines = [line for line in text.splitlines() if line.startswith("  ")]  # one per run
    assert len(lines) == 2 and "MISSES" not in text
    # each run's headline says in one clause why it has no interval; the remedy is said once, below
    assert "1.10x faster (no interval: one round block per variant; 4 prompts, round blocks)" in lines[0]
    assert "0.95x, slower (no interval: one round block per variant;" in lines[1]
    assert f"no run measured a speedup with an interval ({why}): no coverage to count" in text


def ab(point: float, low: float, high: float, i: int = 0):
    from specops.results.role import CALIBRATE_AB

    result = run_result(speedup=point, started_at=T0 + 600 * i).model_copy(update={"role": RunRole(kind=CALIBRATE_AB)})
    return result.model_copy(update={"speedup": result.speedup.model_copy(update={"low": low, "high": high})})


def test_ab_repeats_count_the_intervals_that_hold_the_runs_median_and_weigh_between_against_within():
    from specops.results.calibration import ab_lines, host_summary

    runs = [ab(1.17, 1.05, 1.30), ab(1.51, 1.26, 1.81), ab(1.25, 1.09, 1.42), ab(1.36, 1.09, 1.69)]
    calibration = Calibration("ngram-vllm-serve-cpu", [aa(1.0), aa(0.98)], tuple(runs))
    lines = "\n".join(ab_lines(calibration))
    # median 1.305: the first run's 1.05-1.30 misses it, the others hold it; every pair overlaps (1.26 <= 1.30)
    assert "3 of 4 intervals contain the runs' median speedup 1.305x; 6 of 6 pairs of intervals overlap" in lines
    between = float(lines.split("between runs: SD ")[1].split(" ")[0])
    assert between == pytest.approx(np_std([math.log(r.speedup.point) for r in runs]), abs=1e-3)
    assert "A/B: the profile itself, 4 runs back to back" in format_calibration(calibration)
    assert host_summary(calibration, "2026-12-06") == ("calibrated on this host: A/A 2/2 intervals contain 1.00x, A/B "
                                                       "3/4 hold the runs' median, on 2026-12-06")
    assert ab_lines(Calibration("p", [aa(1.0)])) == []  # no A/B asked: nothing said
    apart = "\n".join(ab_lines(Calibration("p", [aa(1.0)], (ab(1.0, 0.9, 1.1), ab(2.0, 1.8, 2.2)))))
    assert "0 of 2 intervals contain the runs' median speedup 1.500x; 0 of 1 pairs of intervals overlap" in apart


def np_std(values: list[float]) -> float:
    import statistics

    return statistics.stdev(values)


def test_every_run_says_its_hosts_latest_calibration_or_that_there_is_none(tmp_path):
    from specops.results.calibration import host_calibration, save_host_calibration

    assert host_calibration(tmp_path, "ngram-local", "Intel Xeon").startswith("not calibrated here")
    save_host_calibration(tmp_path, "ngram-local", "calibrated on this host: A/A 19/20 ...", "Intel Xeon", "/a/c.md")
    assert host_calibration(tmp_path, "ngram-local", "Intel Xeon") == "calibrated on this host: A/A 19/20 ... (/a/c.md)"
    assert host_calibration(tmp_path, "ngram-local", "AMD EPYC").startswith("not calibrated on this CPU (AMD EPYC")
    assert host_calibration(tmp_path, "other", "Intel Xeon").startswith("not calibrated here")


def test_one_ab_run_is_refused_before_anything_runs():
    from specops.profile.calibration import check_runs
    from specops.profile.errors import ProfileError

    with pytest.raises(ProfileError, match="ab: 1: 0, or 2 to 100 A/B runs"):
        check_runs(20, 1)

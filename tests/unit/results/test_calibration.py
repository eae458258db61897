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

"""The paired speedup and its bootstrap interval, on samples whose answer is known by hand."""
from __future__ import annotations

import numpy as np
import pytest

from specops.results.metrics import RequestSample
from specops.results.model import LEVEL
from specops.results.speedup import paired_speedup


def sample(prompt: int, round_: int, seconds: float, tokens: int = 10) -> RequestSample:
    return RequestSample(prompt=prompt, round=round_, latency_s=seconds, output_tokens=tokens)


def test_point_estimate_is_the_ratio_of_summed_token_rates():
    spec = [sample(0, 0, 1.0), sample(1, 0, 2.0)]
    base = [sample(0, 0, 2.0), sample(1, 0, 3.0)]
    s = paired_speedup(spec, base, throughput_ratio=1.6)
    # speculative: 20 tokens in 3 s; base: 20 tokens in 5 s -> (20/3) / (20/5) = 5/3
    assert s.point == pytest.approx(5 / 3) and s.throughput_ratio == 1.6
    assert (s.prompts, s.rounds, s.resampled) == (2, 1, "prompts")
    # resampling two prompts: both spec 1 s / base 2 s (2.0x), both 2 s / 3 s (1.5x), or the mix (5/3)
    assert s.low == pytest.approx(1.5) and s.high == pytest.approx(2.0)


def test_unequal_output_lengths_are_compared_per_token():
    spec = [sample(0, 0, 1.0, tokens=20)]  # 20 tok/s
    base = [sample(0, 0, 1.0, tokens=10)]  # 10 tok/s
    assert paired_speedup(spec, base).point == pytest.approx(2.0)


def test_only_prompts_both_variants_measured_in_the_same_round_are_paired():
    spec = [sample(0, 0, 1.0), sample(1, 0, 1.0), sample(0, 1, 1.0)]
    base = [sample(0, 0, 2.0), sample(2, 0, 9.0), sample(0, 1, 2.0)]
    s = paired_speedup(spec, base)
    assert s.point == pytest.approx(2.0) and (s.prompts, s.rounds) == (1, 2)
    assert paired_speedup([sample(0, 0, 1.0)], [sample(1, 0, 1.0)]) is None


def test_a_constant_speedup_has_no_spread_and_rounds_resample_within_prompts():
    spec = [sample(p, r, 1.0 + p) for p in range(4) for r in range(3)]
    base = [sample(p, r, 1.5 * (1.0 + p)) for p in range(4) for r in range(3)]
    s = paired_speedup(spec, base)
    assert s.resampled == "rounds within prompts" and (s.prompts, s.rounds) == (4, 3)
    assert s.point == pytest.approx(1.5) and s.low == pytest.approx(1.5) and s.high == pytest.approx(1.5)
    assert s.text() == "1.50x (1.50-1.50, 4 prompts x 3 rounds)"


def noisy(rounds: int, seed: int) -> tuple[list[RequestSample], list[RequestSample]]:
    """16 prompts of different lengths, a true 1.3x, 4% measurement noise per request."""
    rng = np.random.default_rng(seed)
    spec, base = [], []
    for p in range(16):
        seconds = 1.0 + p / 4
        for r in range(rounds):
            spec.append(sample(p, r, seconds / 1.3 * rng.lognormal(0, 0.04)))
            base.append(sample(p, r, seconds * rng.lognormal(0, 0.04)))
    return spec, base


def test_interval_covers_the_true_speedup_and_narrows_with_rounds():
    three, twelve = paired_speedup(*noisy(3, 1)), paired_speedup(*noisy(12, 1))
    for s in (three, twelve):
        assert s.low < 1.3 < s.high
    assert twelve.half_width < three.half_width
    assert paired_speedup(*noisy(3, 1)) == three  # the same samples give the same interval


def test_broken_samples_are_refused():
    with pytest.raises(ValueError, match="no output tokens or no duration"):
        paired_speedup([sample(0, 0, 0.0)], [sample(0, 0, 1.0)])


def coverage(level: float, trials: int = 1000, prompts: int = 60, true: float = 1.3) -> float:
    """How often the interval holds the true speedup, over simulated benchmarks (one round each) whose
    prompts differ in length and whose requests are noisy: what the level promises."""
    rng = np.random.default_rng(7)
    held = 0
    for t in range(trials):
        lengths = rng.lognormal(0, 0.5, prompts)
        spec = [sample(p, 0, lengths[p] / true * rng.lognormal(0, 0.1)) for p in range(prompts)]
        base = [sample(p, 0, lengths[p] * rng.lognormal(0, 0.1)) for p in range(prompts)]
        s = paired_speedup(spec, base, resamples=1000, level=level, seed=t)
        held += s.low < true < s.high
    return held / trials


def test_the_interval_holds_the_true_speedup_as_often_as_its_level_says():
    # 1000 trials: a coverage's standard error is ~0.007, so 90% and 95% intervals are told apart (the
    # percentile bootstrap covers a little less than its level over 60 prompts: 0.945 and 0.88 here).
    assert 0.93 <= coverage(0.95) <= 0.97
    assert 0.865 <= coverage(0.90) <= 0.92


def test_the_result_records_the_level_its_interval_was_computed_at():
    spec, base = noisy(3, 1)
    assert paired_speedup(spec, base).level == LEVEL
    assert paired_speedup(spec, base, level=0.8).level == 0.8

"""The paired speedup and its interval over the design's unit of noise, on samples whose answer is known by hand,
and on simulated hosts whose speed drifts (the interval's level is checked by its coverage)."""
from __future__ import annotations

import numpy as np
import pytest

from specops.results.metrics import RequestSample
from specops.results.paired import LEVEL, Design
from specops.results.speedup import paired_speedup


def sample(prompt: int, round_: int, seconds: float, tokens: int = 10) -> RequestSample:
    return RequestSample(prompt=prompt, round=round_, latency_s=seconds, output_tokens=tokens)


def test_point_estimate_is_the_ratio_of_summed_token_rates():
    spec = [sample(0, 0, 1.0), sample(1, 0, 2.0)]
    base = [sample(0, 0, 2.0), sample(1, 0, 3.0)]
    s = paired_speedup(spec, base, throughput_ratio=1.6, design=Design.REQUESTS)
    # speculative: 20 tokens in 3 s; base: 20 tokens in 5 s -> (20/3) / (20/5) = 5/3
    assert s.point == pytest.approx(5 / 3) and s.throughput_ratio == 1.6
    assert (s.prompts, s.rounds, s.design) == (2, 1, Design.REQUESTS)
    # prompts are the units: a t-interval (1 degree of freedom) on the log scale. Each prompt's share of the
    # four totals (spec tokens, spec s, base tokens, base s): prompt 0 (1/2, 1/3, 1/2, 2/5), prompt 1 the rest,
    # so its influence on log(speedup) is z = -1/3 + 2/5 = 1/15 (and -1/15), and var = 2/1 * 2 / 15^2.
    assert s.resampled.startswith("prompts (t-interval over 2 prompts")
    se = np.sqrt(2 * 2 / 15**2)
    t = 12.7062047  # Student t, 1 degree of freedom, 97.5th percentile
    assert (s.low, s.high) == pytest.approx((5 / 3 * np.exp(-t * se), 5 / 3 * np.exp(t * se)))


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


def test_a_constant_speedup_has_no_spread_in_either_design():
    spec = [sample(p, r, 1.0 + p) for p in range(4) for r in range(3)]
    base = [sample(p, r, 1.5 * (1.0 + p)) for p in range(4) for r in range(3)]
    for design in Design:
        s = paired_speedup(spec, base, design=design)
        assert (s.prompts, s.rounds, s.design) == (4, 3, design)
        assert s.point == pytest.approx(1.5) and s.low == pytest.approx(1.5) and s.high == pytest.approx(1.5)
    assert paired_speedup(spec, base, design=Design.ROUNDS).text() == \
        "1.50x faster (95% interval 1.50-1.50; 4 prompts x 3 rounds, round blocks)"
    assert paired_speedup(spec, base, design=Design.REQUESTS).text() == \
        "1.50x faster (95% interval 1.50-1.50; 4 prompts x 3 rounds, requests interleaved)"


def test_round_blocks_take_a_t_interval_over_the_rounds_log_speedups():
    # Round 0: 2.0x on both prompts, round 1: 1.5x.
    spec = [sample(0, 0, 1.0), sample(1, 0, 1.0), sample(0, 1, 1.0), sample(1, 1, 0.75)]
    base = [sample(0, 0, 2.0), sample(1, 0, 2.0), sample(0, 1, 1.5), sample(1, 1, 1.125)]
    s = paired_speedup(spec, base, design=Design.ROUNDS)
    pooled = (40 / 3.75) / (40 / 6.625)  # speculative 2 + 1.75 s, base 4 + 2.625 s, 40 tokens each
    assert s.point == pytest.approx(pooled) and s.resampled.startswith("rounds (t-interval over 2 rounds")
    z = 2 / 3.75 - 4 / 6.625  # round 0's share of the speculative seconds minus its share of the base's
    se, t = np.sqrt(2 * 2 * z**2), 12.7062047
    assert (s.low, s.high) == pytest.approx((pooled * np.exp(-t * se), pooled * np.exp(t * se)))


def test_one_round_block_per_variant_gets_no_interval_and_says_why():
    spec, base = [sample(p, 0, 1.0) for p in range(8)], [sample(p, 0, 1.3 + p / 10) for p in range(8)]
    s = paired_speedup(spec, base, design=Design.ROUNDS)
    assert s.point > 1 and (s.low, s.high, s.half_width) == (None, None, None)
    assert s.resampled.startswith("none: one round block") and "benchmark.rounds >= 2" in s.resampled
    assert paired_speedup(spec, base, design=Design.REQUESTS).low is not None  # prompts are units there


def test_the_headline_says_which_way_only_where_the_interval_does():
    """speculative / base, so spec requests that take less time read "faster"; an interval that holds 1.00x
    claims neither way and says it cannot tell; one round per variant shows no "x 1 round"."""
    spec = [sample(p, 0, 1.0) for p in range(8)]
    faster = paired_speedup(spec, [sample(p, 0, 1.3 + p / 100) for p in range(8)], design=Design.REQUESTS)
    assert faster.point == pytest.approx(sum(1.3 + p / 100 for p in range(8)) / 8)  # (80 tok/8 s) / (80 tok/base s)
    assert 1 < faster.low < faster.point < faster.high
    assert faster.text() == (f"{faster.point:.2f}x faster ({LEVEL:.0%} interval {faster.low:.2f}-{faster.high:.2f}; "
                             "8 prompts, requests interleaved)")
    slower = paired_speedup(spec, [sample(p, 0, 0.8 + p / 100) for p in range(8)], design=Design.REQUESTS)
    assert slower.high < 1 and slower.text().startswith(f"{slower.point:.2f}x, slower ({LEVEL:.0%} interval ")
    # prompts alternately 10% faster and 8% slower: pooled near 1, an interval on both sides of it
    unsure = paired_speedup(spec, [sample(p, 0, 1.1 if p % 2 else 0.92) for p in range(8)], design=Design.REQUESTS)
    assert unsure.low < 1 < unsure.high
    assert unsure.text() == (f"{unsure.point:.2f}x ({LEVEL:.0%} interval {unsure.low:.2f}-{unsure.high:.2f}, "
                             "cannot tell from 1.00x; 8 prompts, requests interleaved)")
    assert "faster" not in unsure.text() and "slower" not in unsure.text()


def test_without_an_interval_the_headline_says_why_in_one_clause_and_the_record_keeps_the_remedy():
    spec, base = [sample(p, 0, 1.0) for p in range(8)], [sample(p, 0, 1.33) for p in range(8)]
    s = paired_speedup(spec, base, design=Design.ROUNDS)
    assert s.low is None and s.point == pytest.approx(1.33)
    assert s.text() == "1.33x faster (no interval: one round block per variant; 8 prompts, round blocks)"
    assert "benchmark.rounds" not in s.text() and "benchmark.rounds >= 2" in s.resampled  # the remedy: details
    one = paired_speedup(spec[:1], [sample(0, 0, 0.9)], design=Design.REQUESTS)
    assert one.low is None and one.text() == "0.90x, slower (no interval: one prompt; 1 prompt, requests interleaved)"
    even = paired_speedup(spec, spec, design=Design.ROUNDS)
    assert even.text() == "1.00x (no interval: one round block per variant; 8 prompts, round blocks)"


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


def test_interval_narrows_with_rounds():
    # Whether it holds the truth as often as it says is the coverage tests' matter (below): one case misses 5%.
    for design in Design:
        three, twelve = paired_speedup(*noisy(3, 1), design=design), paired_speedup(*noisy(12, 1), design=design)
        assert abs(twelve.point / 1.3 - 1) < 0.01
        assert twelve.half_width < three.half_width
        assert paired_speedup(*noisy(3, 1), design=design) == three  # the same samples give the same interval


def test_broken_samples_are_refused():
    with pytest.raises(ValueError, match="no output tokens or no duration"):
        paired_speedup([sample(0, 0, 0.0)], [sample(0, 0, 1.0)])


def coverage(level: float, trials: int = 1000, prompts: int = 60, true: float = 1.3) -> float:
    """How often the interval holds the true speedup, over simulated benchmarks (one round each) whose
    prompts differ in length and whose requests are noisy: what the level promises."""
    rng = np.random.default_rng(7)
    held = 0
    for _ in range(trials):
        lengths = rng.lognormal(0, 0.5, prompts)
        spec = [sample(p, 0, lengths[p] / true * rng.lognormal(0, 0.1)) for p in range(prompts)]
        base = [sample(p, 0, lengths[p] * rng.lognormal(0, 0.1)) for p in range(prompts)]
        s = paired_speedup(spec, base, design=Design.REQUESTS, level=level)
        held += s.low < true < s.high
    return held / trials


def test_the_prompt_interval_holds_the_true_speedup_as_often_as_its_level_says():
    # 1000 trials: a coverage's standard error is ~0.007, so 90% and 95% intervals are told apart.
    assert 0.93 <= coverage(0.95) <= 0.97
    assert 0.88 <= coverage(0.90) <= 0.92


DRIFT = 0.10  # the host's speed, log scale, from one minute to the next (11% measured between blocks here)


def drifting_host(design: Design, rounds: int, rng: np.random.Generator, true: float = 1.0,
                  prompts: int = 8) -> tuple[list[RequestSample], list[RequestSample]]:
    """One benchmark on a host whose speed wanders as a random walk while it runs, 2% noise per request.
    requests: each prompt's two requests run back to back (one moment of the host); rounds: each variant's
    round is one block of requests (the host moves on between the blocks)."""
    lengths = rng.lognormal(0, 0.5, prompts)
    speed = 0.0
    spec, base = [], []
    for r in range(rounds):
        if design is Design.REQUESTS:
            for p in range(prompts):
                speed += rng.normal(0, DRIFT / np.sqrt(prompts))
                spec.append(sample(p, r, lengths[p] / true * np.exp(speed + rng.normal(0, 0.02))))
                base.append(sample(p, r, lengths[p] * np.exp(speed + rng.normal(0, 0.02))))
        else:
            for arm, factor in ((spec, 1 / true), (base, 1.0)):
                speed += rng.normal(0, DRIFT)
                arm.extend(sample(p, r, lengths[p] * factor * np.exp(speed + rng.normal(0, 0.02)))
                           for p in range(prompts))
    return spec, base


def drift_coverage(design: Design, rounds: int, analysed_as: Design, level: float = LEVEL,
                   trials: int = 400) -> float:
    rng = np.random.default_rng(11)
    held = 0
    for _ in range(trials):
        s = paired_speedup(*drifting_host(design, rounds, rng), design=analysed_as, level=level)
        held += s.low <= 1.0 <= s.high
    return held / trials


def test_on_a_drifting_host_each_designs_interval_covers_as_its_level_says():
    # 400 A/A trials (true speedup 1.00x): a coverage's standard error is ~0.011.
    requests = drift_coverage(Design.REQUESTS, 1, Design.REQUESTS)
    rounds = drift_coverage(Design.ROUNDS, 4, Design.ROUNDS)
    print(f"coverage of 1.00x under drift: requests interleaved {requests:.3f}, 4 round blocks {rounds:.3f}")
    assert 0.92 <= requests <= 0.98 and 0.92 <= rounds <= 0.98  # t is exact for normal noise on the log scale
    assert drift_coverage(Design.ROUNDS, 4, Design.ROUNDS, level=0.8) < rounds - 0.08  # the level is what it says


def test_resampling_requests_of_round_blocks_undercovers_which_is_why_blocks_resample_rounds():
    # What the interval did before issue 27: it treated the requests of a block as independent.
    wrong = drift_coverage(Design.ROUNDS, 1, Design.REQUESTS)
    print(f"coverage of 1.00x of an interval over the prompts of one round block each: {wrong:.3f}")
    assert wrong < 0.5


def test_the_result_records_the_level_its_interval_was_computed_at():
    spec, base = noisy(3, 1)
    assert paired_speedup(spec, base).level == LEVEL
    assert paired_speedup(spec, base, level=0.8).level == 0.8


def test_each_prompts_speedup_is_base_time_over_speculative_time_per_output_token():
    # prompt 0: the speculative answer takes half the base's time; prompt 1: a third, at twice the tokens
    spec = [sample(0, 0, 1.0), sample(1, 0, 1.0, tokens=20)]
    base = [sample(0, 0, 2.0), sample(1, 0, 1.5, tokens=10)]
    spread = paired_speedup(spec, base).per_prompt
    # base 0.2 s/token over speculative 0.1; base 0.15 over speculative 0.05
    assert spread.by_prompt == pytest.approx({0: 2.0, 1: 3.0})
    assert paired_speedup(base, spec).per_prompt.by_prompt == pytest.approx({0: 0.5, 1: 1 / 3})  # arms swapped
    assert (spread.minimum, spread.maximum, spread.max_prompt, spread.prompts) == (pytest.approx(2.0),
                                                                                   pytest.approx(3.0), 1, 2)


def test_a_prompts_several_requests_and_rounds_are_pooled_before_its_ratio():
    # prompt 0: the speculative variant 10 tokens in 1 s (two requests) then 10 in 4 s, the base 10 in 4 s then
    # 10 in 8 s: pooled 20 tokens in 5 s vs 20 in 12 s -> 2.4x, where the mean of the rounds' ratios (4x, 2x) is 3x
    spec = [sample(0, 0, 0.5, tokens=5), sample(0, 0, 0.5, tokens=5), sample(0, 1, 4.0), sample(1, 0, 1.0),
            sample(1, 1, 1.0)]
    base = [sample(0, 0, 4.0), sample(0, 1, 8.0), sample(1, 0, 1.0), sample(1, 1, 1.0)]
    spread = paired_speedup(spec, base, design=Design.REQUESTS).per_prompt
    assert spread.by_prompt == pytest.approx({0: 2.4, 1: 1.0})
    assert spread.median == pytest.approx((2.4 + 1.0) / 2) and spread.max_prompt == 0


def test_a_looping_prompt_shows_as_the_maximum_while_the_median_stays_near_one():
    rng = np.random.default_rng(3)
    loops = 11
    spec, base = [], []
    for p in range(16):
        for r in range(2):
            seconds = 10.0 * rng.uniform(0.95, 1.05)
            base.append(sample(p, r, seconds, tokens=128))
            spec.append(sample(p, r, seconds / (5.0 if p == loops else rng.uniform(0.97, 1.03)), tokens=128))
    s = paired_speedup(spec, base, design=Design.REQUESTS)
    spread = s.per_prompt
    assert spread.max_prompt == loops and spread.maximum == pytest.approx(5.0, rel=0.06)
    assert 0.95 < spread.minimum <= spread.p25 <= spread.median <= spread.p75 < 1.06 and spread.prompts == 16
    assert s.point < 1.3  # the pooled headline hides it: one prompt in 16 at 5x
    assert spread.text().endswith(f"max {spread.maximum:.2f}x at prompt {loops}")
    assert spread.text().startswith("16 prompts: min ")

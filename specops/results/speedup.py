"""The speedup of the speculative variant over the base, paired prompt by prompt, with an interval over the
design's independent unit of noise.

Both variants answer the same prompts in every round, so each (prompt, round) is a pair of
measurements. The speedup is the ratio of output tokens per second of request time, summed
over the pairs: (sum of speculative tokens / sum of speculative latency) / (same for base),
which at a pinned output length is the ratio of total request latency.

The interval is over what varies independently, which the design decides (Design, benchmark.pairing):

- requests interleaved: each prompt's requests to the variants ran back to back, so the host's drift falls on
  both halves of every pair and the prompts are the independent units (each with all its rounds).
- round blocks: each variant's round is one tool run, and the host's speed drifts between runs (~11% between
  2.5-minute blocks measured here on 2026-11-23), so the rounds are the units. Requests within a block are
  not independent of each other: resampling them gave intervals that covered 1.00x in 7 of 20 A/A runs.
- one round block per variant is a single unit: no interval, and `resampled` says why.

Each prompt's own speedup (its rounds pooled the same way) is kept beside the headline (PromptSpread): a pooled
ratio weighs the prompts by their time, so one prompt the drafter predicts well can carry it.

Either way the interval is a Student t over the units on the log scale, around the pooled speedup, with the
pooled ratio's own (linearized) variance: a percentile bootstrap over the demo's 8 prompts covered only ~87% at
95% where this covers its level (tests/unit/results/test_speedup.py simulates both on a drifting host).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np
from scipy.special import stdtrit

from specops.results.metrics import PromptSpread, RequestSample
from specops.results.model import LEVEL, Design, Speedup


def paired_units(spec: Iterable[RequestSample], base: Iterable[RequestSample]) -> dict[tuple[int, int], np.ndarray]:
    """(prompt, round) -> [spec tokens, spec seconds, base tokens, base seconds] for pairs both variants measured."""
    sums: dict[str, dict[tuple[int, int], list[float]]] = {"spec": defaultdict(lambda: [0.0, 0.0]),
                                                           "base": defaultdict(lambda: [0.0, 0.0])}
    for name, samples in (("spec", spec), ("base", base)):
        for s in samples:
            unit = sums[name][(s.prompt, s.round)]
            unit[0] += s.output_tokens
            unit[1] += s.latency_s
    both = sorted(set(sums["spec"]) & set(sums["base"]))
    return {key: np.array(sums["spec"][key] + sums["base"][key]) for key in both}


def ratio(units: np.ndarray) -> np.ndarray:
    """Speedup of the summed units; `units` is (..., n, 4), the result (...)."""
    total = units.sum(axis=-2)
    return (total[..., 0] / total[..., 1]) / (total[..., 2] / total[..., 3])


def paired_speedup(spec: list[RequestSample], base: list[RequestSample], throughput_ratio: float | None = None,
                   design: Design = Design.ROUNDS, level: float = LEVEL) -> Speedup | None:
    """The paired speedup and its interval; None when no prompt was measured by both variants."""
    pairs = paired_units(spec, base)
    if not pairs:
        return None
    keys = list(pairs)
    units = np.stack([pairs[k] for k in keys])
    if (units[:, [1, 3]] <= 0).any() or (units[:, [0, 2]] <= 0).any():
        raise ValueError("a paired request has no output tokens or no duration; its tool export is broken")
    prompts = sorted({p for p, _ in keys})
    rounds = sorted({r for _, r in keys})
    point = float(ratio(units))
    if design is Design.REQUESTS:
        low, high, resampled = _t_interval(units, [p for p, _ in keys], point, level, "prompts",
                                           "each prompt measured on every variant back to back")
    elif len(rounds) < 2:
        low, high, resampled = None, None, ("none: one round block per variant is one unit of noise; set "
                                            "benchmark.rounds >= 2, or interleave requests (benchmark.pairing, "
                                            "with a tool that can)")
    else:
        low, high, resampled = _t_interval(units, [r for _, r in keys], point, level, "rounds",
                                           "each variant's round one block")
    by_prompt = {p: float(ratio(units[[k[0] == p for k in keys]])) for p in prompts}
    return Speedup(point=point, low=low, high=high, level=level, prompts=len(prompts), rounds=len(rounds),
                   resampled=resampled, throughput_ratio=throughput_ratio, design=design,
                   per_prompt=PromptSpread(by_prompt=by_prompt))


def log_ratio_se(clusters: np.ndarray) -> float:
    """The standard error of log(ratio) over independent clusters (n, 4), by linearization: log ratio is
    log Ts - log Ls - log Tb + log Lb of the four totals, so a cluster's influence is its share of each total,
    z = ts - ls - tb + lb, and the variance n/(n-1) sum z^2 (the ratio estimator's sandwich variance)."""
    shares = clusters / clusters.sum(axis=0)
    z = shares[:, 0] - shares[:, 1] - shares[:, 2] + shares[:, 3]
    n = len(clusters)
    return float(np.sqrt(n / (n - 1) * np.sum(z**2)))


def _t_interval(units: np.ndarray, unit_of: list[int], point: float, level: float, name: str,
                why: str) -> tuple[float | None, float | None, str]:
    """Student t with n-1 degrees of freedom over the independent units (each unit's pairs pooled), on the log
    scale around the pooled speedup: the pooled estimate weighs long prompts more, and so does its variance."""
    ids = sorted(set(unit_of))
    if len(ids) < 2:
        return None, None, f"none: one {name[:-1]} is one unit"
    clusters = np.stack([units[[i for i, u in enumerate(unit_of) if u == k]].sum(axis=0) for k in ids])
    se = log_ratio_se(clusters)
    # Student t's quantile, as scipy.stats.t.ppf gives it; scipy.special imports in ~1.9 s less than scipy.stats
    t = float(stdtrit(len(ids) - 1, 1 - (1 - level) / 2))
    return (point * float(np.exp(-t * se)), point * float(np.exp(t * se)),
            f"{name} (t-interval over {len(ids)} {name}; {why})")

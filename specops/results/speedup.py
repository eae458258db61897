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

import math
from collections import defaultdict
from collections.abc import Iterable
from statistics import NormalDist

import numpy as np
from scipy.special import stdtrit

from specops.results.metrics import PromptSpread, RequestSample
from specops.results.paired import LEVEL, Design, Speedup


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
                   design: Design = Design.ROUNDS, level: float = LEVEL,
                   mix: dict[int, tuple[str, float]] | None = None) -> Speedup | None:
    """The paired speedup and its interval; None when no prompt was measured by both variants.

    `mix`: prompt -> (its category, the category's weight). The speedup is then the mix's: base seconds per token
    over speculative ones, each a weighted mean of the categories' own (every unit of a category scaled by its
    weight over the category's base tokens, so the pooled ratio is the weighted one at pinned output lengths), and
    with interleaved requests the interval is stratified by category (its variance within categories only)."""
    pairs = paired_units(spec, base)
    if mix is not None:  # only the prompts of categories the mix weighs
        pairs = {key: units for key, units in pairs.items() if key[0] in mix}
    if not pairs:
        return None
    keys = list(pairs)
    units = np.stack([pairs[k] for k in keys])
    if (units[:, [1, 3]] <= 0).any() or (units[:, [0, 2]] <= 0).any():
        raise ValueError("a paired request has no output tokens or no duration; its tool export is broken")
    prompts = sorted({p for p, _ in keys})
    rounds = sorted({r for _, r in keys})
    strata = None
    if mix is not None:
        units, strata = _weighted(units, [mix[p] for p, _ in keys])
    point = float(ratio(units))
    if design is Design.REQUESTS:
        low, high, resampled = _t_interval(units, [p for p, _ in keys], point, level, "prompts",
                                           "each prompt measured on every variant back to back", strata)
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


def _weighted(units: np.ndarray, weights: list[tuple[str, float]]) -> tuple[np.ndarray, list[str]]:
    """The units scaled so that their pooled ratio is the mix's, and each unit's category."""
    categories = [c for c, _ in weights]
    base_tokens = {c: units[[k == c for k in categories], 2].sum() for c in set(categories)}
    scale = np.array([w / base_tokens[c] for c, w in weights])
    return units * scale[:, None], categories


def log_ratio_se(clusters: np.ndarray, strata: list[str] | None = None) -> float:
    """The standard error of log(ratio) over independent clusters (n, 4), by linearization: log ratio is
    log Ts - log Ls - log Tb + log Lb of the four totals, so a cluster's influence is its share of each total,
    z = ts - ls - tb + lb, and the variance n/(n-1) sum z^2 (the ratio estimator's sandwich variance). With `strata`
    (each cluster's, every stratum 2 clusters or more), the stratified one: sum over strata of n_h/(n_h-1) times
    the sum of (z - the stratum's mean z)^2."""
    shares = clusters / clusters.sum(axis=0)
    z = shares[:, 0] - shares[:, 1] - shares[:, 2] + shares[:, 3]
    if strata is None:
        n = len(clusters)
        return float(np.sqrt(n / (n - 1) * np.sum(z**2)))
    var = 0.0
    for h in set(strata):
        zh = z[[s == h for s in strata]]
        var += len(zh) / (len(zh) - 1) * float(np.sum((zh - zh.mean()) ** 2))
    return float(np.sqrt(var))


def _t_interval(units: np.ndarray, unit_of: list[int], point: float, level: float, name: str, why: str,
                strata: list[str] | None = None) -> tuple[float | None, float | None, str]:
    """Student t with n-1 degrees of freedom over the independent units (each unit's pairs pooled), on the log
    scale around the pooled speedup: the pooled estimate weighs long prompts more, and so does its variance.
    `strata` (each pair's category): the units' variance within categories, on n - categories degrees."""
    ids = sorted(set(unit_of))
    if len(ids) < 2:
        return None, None, f"none: one {name[:-1]} is one unit"
    clusters = np.stack([units[[i for i, u in enumerate(unit_of) if u == k]].sum(axis=0) for k in ids])
    cluster_strata, df = None, len(ids) - 1
    if strata is not None:
        cluster_strata = [strata[unit_of.index(k)] for k in ids]
        if lone := sorted(h for h in set(cluster_strata) if cluster_strata.count(h) < 2):
            return None, None, f"none: category {', '.join(lone)} has one {name[:-1]}, no spread to weigh"
        df = len(ids) - len(set(cluster_strata))
        why += f"; stratified by its {len(set(cluster_strata))} categories"
    se = log_ratio_se(clusters, cluster_strata)
    # Student t's quantile, as scipy.stats.t.ppf gives it; scipy.special imports in ~1.9 s less than scipy.stats
    t = float(stdtrit(df, 1 - (1 - level) / 2))
    return (point * float(np.exp(-t * se)), point * float(np.exp(t * se)),
            f"{name} (t-interval over {len(ids)} {name}; {why})")


def wilson(successes: float, trials: float, level: float = LEVEL) -> tuple[float, float] | None:
    """Wilson score interval of a proportion; None without trials."""
    if trials <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = min(max(successes / trials, 0.0), 1.0)
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)

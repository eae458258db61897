"""The speedup of the speculative variant over the base, paired prompt by prompt, with a bootstrap interval.

Both variants answer the same prompts in every round, so each (prompt, round) is a pair of
measurements. The speedup is the ratio of output tokens per second of request time, summed
over the pairs: (sum of speculative tokens / sum of speculative latency) / (same for base),
which at a pinned output length is the ratio of total request latency.

The interval is a percentile bootstrap. With several rounds it resamples rounds within each
prompt: the benchmark's prompt set is fixed on purpose (a regression compares the same
prompts night after night), so what varies between runs is the measurement, not the prompts.
With one round there is nothing to resample within a prompt, so it resamples prompts, which
also counts how unlike each other the prompts are: a wider, conservative interval.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from specops.results.metrics import RequestSample
from specops.results.model import LEVEL, Speedup

RESAMPLES = 4000
SEED = 0  # the interval of a given set of samples is reproducible


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
                   resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED) -> Speedup | None:
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
    rng = np.random.default_rng(seed)
    low = high = None
    if len(rounds) > 1:
        resampled = "rounds within prompts"
        # Per prompt, draw as many (prompt, round) pairs as it has, from its own rounds.
        picks = []
        for p in prompts:
            rows = np.array([i for i, (q, _) in enumerate(keys) if q == p])
            picks.append(rows[rng.integers(0, len(rows), size=(resamples, len(rows)))])
        draws = units[np.concatenate(picks, axis=1)]
    else:
        resampled = "prompts"
        draws = units[rng.integers(0, len(keys), size=(resamples, len(keys)))]
    if len(keys) > 1:
        stats = ratio(draws)
        tail = (1 - level) / 2 * 100
        low, high = (float(v) for v in np.percentile(stats, [tail, 100 - tail]))
    return Speedup(point=point, low=low, high=high, level=level, prompts=len(prompts), rounds=len(rounds),
                   resampled=resampled, throughput_ratio=throughput_ratio)

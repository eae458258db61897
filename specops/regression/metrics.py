"""The metrics a regression watches, one registry: how each is read from a RunResult, which way is
better, and its default threshold.

Per-position acceptance rates are a family: `acceptance_rate_pos<i>` for each draft position the
run's acceptance source counted, all sharing one default threshold. Positions number from 1 (the first
drafted token), as the report and the upgrade table do (issue 39: verdicts said pos3 where the report
said 4). The names are computed from each run's record at every judging, never stored, so renumbering
them rewrote no data; a policy naming `acceptance_rate_pos0` (the old first) is refused, saying so.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from specops.results.figures import FIGURES, figure
from specops.results.model import RunResult
from specops.results.speedup import wilson

POSITION_PREFIX = "acceptance_rate_pos"
SPEEDUP = "speedup"  # also the metric an A/A calibration sets the noise floor of
_POSITION = re.compile(rf"{POSITION_PREFIX}(\d+)")


@dataclass(frozen=True)
class Metric:
    name: str
    label: str  # for tables and plots
    higher_is_better: bool
    default_threshold: float  # worse than baseline x this violates (see RegressionPolicy)
    # Absolute speed (tokens/s, ms) moves with the host as much as with the build: judged only while
    # the same run's base arm shows the host steady (RegressionPolicy.judge_absolute).
    absolute: bool = False
    read: Callable[[RunResult], float | None] | None = field(default=None, repr=False, compare=False)


def _speculative(name: str, key: str, higher_is_better: bool, threshold: float, absolute: bool = False) -> Metric:
    """Metric `name` (as regression policies in profiles name it): the speculative variant's figure `key` of the
    catalogue (results/figures.py FIGURES), under the catalogue's label."""
    fig = FIGURES[key]
    return Metric(name, f"{fig.header} (speculative)", higher_is_better, threshold, absolute,
                  read=lambda r: fig.of(r, "speculative"))


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric(SPEEDUP, "speedup (x)", True, 0.95, read=lambda r: r.speedup.point if r.speedup else None),
    _speculative("output_tokens_per_s", "tokens_per_s", True, 0.95, absolute=True),
    _speculative("mean_acceptance_length", "accepted_per_step", True, 0.95),
    _speculative("itl_p50_ms", "itl_p50", False, 1.10, absolute=True),
)}
# The family's defaults; its members are made by `metric()`.
POSITION_FAMILY = Metric(POSITION_PREFIX, "acceptance rate at draft position <i>", True, 0.90)
# Per category, where the run's prompts have categories (benchmark.categories): `speedup[qa]`,
# `mean_acceptance_length[qa]`, judged as the whole run's figure is, so a drop in one kind of request while the
# others hold shows as that category's line
_CATEGORY = re.compile(rf"({SPEEDUP}|mean_acceptance_length)\[([^\]]+)\]")


class UnknownMetric(ValueError):
    pass


def _longest_draft() -> int:
    """The most draft tokens any method's profile may ask for: positions beyond it are never measured."""
    from specops.methods.specs import ALL_METHODS  # noqa: PLC0415 - the method registry, read once

    bounds = [getattr(rule, "le", None) for method in ALL_METHODS
              if (field_info := method.model_fields.get("num_speculative_tokens")) for rule in field_info.metadata]
    return max(b for b in bounds if b is not None)


def allowed_names() -> list[str]:
    return [*METRICS, f"{SPEEDUP}[<category>] and mean_acceptance_length[<category>] (runs whose prompts have "
                      "categories)", f"{POSITION_PREFIX} (every position)",
            f"{POSITION_PREFIX}<i> (one position, i from 1, the first drafted token, to {_longest_draft()})"]


def metric(name: str) -> Metric:
    """The registered metric `name`, or a member of the per-position family."""
    if name in METRICS:
        return METRICS[name]
    if (match := _POSITION.fullmatch(name)) and 1 <= int(match[1]) <= _longest_draft():
        family = POSITION_FAMILY
        return Metric(name, f"acceptance rate, draft position {int(match[1])}", family.higher_is_better,
                      family.default_threshold)
    if match := _CATEGORY.fullmatch(name):
        whole = METRICS[match[1]]
        return Metric(name, f"{whole.label}, category {match[2]}", whole.higher_is_better, whole.default_threshold)
    renumbered = "; positions number from 1 (the first drafted token)" if name == f"{POSITION_PREFIX}0" else ""
    raise UnknownMetric(f"unknown metric {name!r}{renumbered}; allowed: {', '.join(allowed_names())}")


def position(name: str) -> int | None:
    """The draft position of a per-position metric name, else None."""
    match = _POSITION.fullmatch(name)
    return int(match[1]) if match else None


def order_key(name: str) -> tuple[int, int, str]:
    """Registry order, then positions in order: tables and plots list metrics alike."""
    names = list(METRICS)
    if name in METRICS:
        return (names.index(name), 0, name)
    pos = position(name)
    return (len(names), pos if pos is not None else 0, name)


def metric_values(result: RunResult) -> dict[str, float]:
    """Every tracked metric the run has, finite values only (a failed run has none)."""
    values: dict[str, float | None] = {name: m.read(result) for name, m in METRICS.items() if m.read}
    for i, rate in enumerate(figure(result, "speculative", "acceptance", "position_rates") or [], start=1):
        values[f"{POSITION_PREFIX}{i}"] = rate
    for f in result.workload.categories if result.workload else []:
        values[f"{SPEEDUP}[{f.category}]"] = f.speedup.point if f.speedup else None
        values[f"mean_acceptance_length[{f.category}]"] = f.accepted_per_step
    return {name: float(v) for name, v in values.items() if v is not None and math.isfinite(v)}


def drafted_steps(result: RunResult) -> float | None:
    """The verification steps that carried a draft: the trials each per-position rate counts over."""
    steps = figure(result, "speculative", "acceptance", "num_drafts")
    return float(steps) if steps else None


def counting_band(pool: list[tuple[RunResult, float]]) -> tuple[float, float] | None:
    """The 95% Wilson interval of a per-position rate over its baseline runs' pooled drafted steps, or None when
    a run lacks the count. A rate is a count over n steps and is known no closer than counting allows: the log
    band alone gave three 0% runs the band 0.001-0.001 (issue 39), which any run off zero leaves, where 0 of
    300 steps says only that the rate is below ~1.3%. Never zero-width: n is finite."""
    steps = [drafted_steps(run) for run, _ in pool]
    if not pool or None in steps:
        return None
    return wilson(sum(value * n for (_, value), n in zip(pool, steps)), sum(steps))


def host_speed(result: RunResult) -> float | None:
    """The same run's base arm output tokens/s: how fast the host was, speculation aside."""
    value = FIGURES["tokens_per_s"].of(result, "base")
    return float(value) if value is not None and math.isfinite(value) and value > 0 else None

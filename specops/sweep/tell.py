"""How many units (prompts, or rounds) would tell two speedups apart, from the spread a sweep measured.

A cell's 95% interval is a Student t over its n independent units on the log scale (results/speedup.py):
point x exp(+-t(n-1) s / sqrt(n)), s the units' own spread. Where two intervals overlap (or one holds 1.00x, the
base), the count asked for is the smallest n' at which intervals of that spread would lie apart 4 times in 5 if the
gap between the points is the true one: (t(n'-1, 97.5%) + t(n'-1, 80%)) s / sqrt(n') < gap, the usual power
calculation (at the bare t(97.5%) they would lie apart only half the time). Roughly: s itself is estimated from
the few units measured, and a gap of a few percent needs hundreds of prompts on a host that drifts by more.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import stdtrit

from specops.results.paired import LEVEL

POWER = 0.8  # the chance that the count asked for tells them apart, if the measured gap is the true one
MAX_UNITS = 10_000  # past this, "more than": a sweep that size is not a fix anyone runs
# The profile field that sets each unit's count: prompts are requests (interleaved at concurrency 1), rounds above.
KNOB = {"prompts": "benchmark.num_requests", "rounds": "benchmark.rounds"}


def _unit_spread(point: float, high: float, n: int) -> float:
    """s of the log speedup per unit, from an interval over n units."""
    return math.log(high / point) / float(stdtrit(n - 1, 1 - (1 - LEVEL) / 2)) * math.sqrt(n)


def units_to_tell(n: int, cells: list[tuple[float, float]], against_base: bool) -> int | None:
    """The smallest unit count at which these intervals ((point, high) each, over n units) would lie apart
    (against_base: one cell's, from 1.00x) with POWER, or None: the points are equal, or it takes more than
    MAX_UNITS."""
    if n < 2:
        return None
    logs = [math.log(point) for point, _ in cells]
    gap = abs(logs[0]) if against_base else abs(logs[0] - logs[1])
    # the rule is that the intervals do not overlap: their half-widths add
    spread = sum(_unit_spread(point, high, n) for point, high in cells)
    if gap == 0 or spread <= 0:
        return None
    counts = np.arange(2, MAX_UNITS + 1)
    apart = (stdtrit(counts - 1, 1 - (1 - LEVEL) / 2) + stdtrit(counts - 1, POWER)) * spread / np.sqrt(counts) < gap
    return int(counts[np.argmax(apart)]) if apart.any() else None


def would_tell(n: int | None, unit: str, cells: list[tuple[float, float]], against_base: bool = True,
               what: str = "") -> str:
    """The clause a 'cannot tell' line ends with: about how many units would tell (`what`: them apart, named), and
    the override that asks for them; or why no count is given."""
    if n is None or n < 2:
        return f"no spread to size a rerun from ({'one ' + unit[:-1] if n else 'no unit count'})"
    needed = units_to_tell(n, cells, against_base)
    if needed is None:
        ratio = cells[0][0] / (1.0 if against_base else cells[1][0])
        return (f"more than {MAX_UNITS} {unit} would be needed at this spread (the speedups are "
                f"{max(ratio, 1 / ratio) - 1:.1%} apart)")
    return (f"about {needed} {unit} would tell{what} at this spread "
            f"(--set {KNOB.get(unit, 'benchmark.num_requests')}={needed})")

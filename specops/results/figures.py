"""A variant's figure read from a run the one way every table, plot and judgement reads it, and shown the one way
every text table shows it."""
from __future__ import annotations

from specops.results.model import RunResult

MISSING = "-"  # what a table shows for a figure not measured


def figure(result: RunResult | None, variant: str, part: str, name: str) -> float | None:
    """`name` of the variant's `part` (metrics, acceptance or cost); None where the run, the variant or the part is
    missing, and for an acceptance its source could not give (unavailable)."""
    record = result.variant(variant) if result is not None else None
    found = getattr(record, part) if record is not None else None
    if found is None or (part == "acceptance" and not found.available):
        return None
    return getattr(found, name)


def shown(value: float | None, spec: str = ".2f", unit: str = "") -> str:
    return MISSING if value is None else f"{value:{spec}}{unit}"


def interval_text(point: float | None, low: float | None, high: float | None, spec: str = ".2f",
                  unit: str = "x") -> str:
    """`1.23x (1.10-1.37)`: the point, and its interval where it has one."""
    if point is None:
        return MISSING
    spread = f" ({low:{spec}}-{high:{spec}})" if low is not None and high is not None else ""
    return f"{point:{spec}}{unit}{spread}"

"""A variant's figure read from a run the one way every table, plot and judgement reads it."""
from __future__ import annotations

from specops.results.model import RunResult


def figure(result: RunResult | None, variant: str, part: str, name: str) -> float | None:
    """`name` of the variant's `part` (metrics, acceptance or cost); None where the run, the variant or the part is
    missing, and for an acceptance its source could not give (unavailable)."""
    record = result.variant(variant) if result is not None else None
    found = getattr(record, part) if record is not None else None
    if found is None or (part == "acceptance" and not found.available):
        return None
    return getattr(found, name)

"""Digits a figure is shown with, by what its column measures: the one rule for tables people read (the
comparison table artifact). Files for programs (comparison.csv, manifest.json) keep every digit."""
from __future__ import annotations

import math
import re

import pandas as pd

# (column name pattern, decimals), first match wins: what the figure measures decides, not its size.
DIGITS: list[tuple[str, int]] = [
    (r"^speedup", 3),  # ratios: 1.23x, with intervals that differ in the third digit
    (r"^acceptance_rate$", 3),
    (r"_s_per_step$", 4),  # seconds per verification step: tenths of a millisecond
    (r"_per_step$", 2),  # tokens per verification step
    (r"_tok_s$", 1),
    (r"_req_s$", 2),
    (r"_ms(_|$)", 1),
    (r"_sequence_length", 1),
    (r"^(num_|request_count$|rounds$)", 0),  # counts
    (r"^cpu_s_per_1k", 1),
    (r"^gpu_j_per_1k", 0),
    (r"_step_s$", 4),
]
SIGNIFICANT = 4  # any other float: enough to compare, short enough to read


def decimals(column: str) -> int | None:
    """The decimals of `column` (None: no rule, the float keeps SIGNIFICANT significant digits)."""
    return next((d for pattern, d in DIGITS if re.search(pattern, column)), None)


def rounded(column: str, value):
    """`value` as the table shows it: floats rounded by the column's rule, whole counts as ints, NaN as None."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, float) and math.isnan(value):
        return None
    places = decimals(column)
    if places is None:
        if value == 0 or isinstance(value, int):
            return value
        places = max(0, SIGNIFICANT - 1 - math.floor(math.log10(abs(value))))
    return int(round(value)) if places == 0 else round(float(value), places)


def rounded_records(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows for a table artifact, each figure rounded by its column."""
    rows = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    return [{column: rounded(column, value) for column, value in row.items()} for row in rows]

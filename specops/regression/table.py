"""A run's verdicts as a table: plain text for logs and the terminal, Markdown for the Prefect UI, which cut the
plain table's code block at the page's edge (the note column went first)."""
from __future__ import annotations

from specops.regression.verdict import MetricVerdict
from specops.results.figures import shown
from specops.results.history import text_table

HEADERS = ["profile", "metric", "verdict", "value", "baseline", "band", "threshold", "streak", "note"]


def _rows(verdicts: list[MetricVerdict]) -> list[list[str]]:
    return [[v.profile, v.metric, v.verdict.value, shown(v.value, ".4g"), shown(v.baseline, ".4g"),
             f"{v.band[0]:.4g}-{v.band[1]:.4g}" if v.band else "-",
             "-" if v.threshold is None else f"x{v.threshold:g}",
             str(len(v.violating_uids)) if v.violating_uids else "-", v.why] for v in verdicts]


def verdict_table(verdicts: list[MetricVerdict]) -> str:
    """A plain-text table, one line per verdict."""
    if not verdicts:
        return "no verdicts (no runs)"
    return text_table(HEADERS, _rows(verdicts))


def verdict_markdown(verdicts: list[MetricVerdict]) -> str:
    """The same for the Prefect UI: a Markdown table of the figures (the profile is the artifact's heading), each
    verdict's note in a list under it. The UI neither wraps a table's cells nor a code block's lines: a note (host
    drift, a deterministic metric's rule) in a column ran past the page's edge, where a list item wraps."""
    if not verdicts:
        return "no verdicts (no runs)"
    headers, rows = HEADERS[1:-1], [row[1:-1] for row in _rows(verdicts)]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    notes = [f"- **{v.metric}** ({v.verdict.value}): {v.why}" for v in verdicts if v.why]
    return "\n".join(lines + (["", "Notes:", "", *notes] if notes else []))

"""A run's verdicts as a table: plain text for logs and the terminal, Markdown for the Prefect UI, whose code blocks
cut a wide table at the page's edge (the note column went first) where a Markdown table wraps its cells."""
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
    """The same as a Markdown table (cells escaped: a `|` in a note would split its row)."""
    if not verdicts:
        return "no verdicts (no runs)"
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") or " " for cell in row) + " |" for row in _rows(verdicts)]
    return "\n".join(lines)

"""A run's verdicts as a plain-text table and as the Markdown table the UI shows whole."""
from __future__ import annotations

from specops.regression.policy import RegressionPolicy
from specops.regression.table import HEADERS, verdict_markdown
from specops.regression.verdict import evaluate
from tests.unit.regression.runs import baseline, run


def test_the_markdown_table_keeps_every_column_the_note_last():
    verdicts = evaluate([*baseline(2), run(2, speedup=1.2)], RegressionPolicy())
    lines = verdict_markdown(verdicts).splitlines()
    assert lines[0] == "| " + " | ".join(HEADERS) + " |" and HEADERS[-1] == "note"
    assert len(lines) == 2 + len(verdicts)
    speedup = next(line for line in lines if "| speedup |" in line)
    assert speedup.endswith("| needs 1 more run |") and speedup.count("|") == len(HEADERS) + 1
    assert verdict_markdown([]) == "no verdicts (no runs)"

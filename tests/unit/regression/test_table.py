"""A run's verdicts as a plain-text table and as the Markdown table the UI shows whole."""
from __future__ import annotations

from specops.regression.policy import RegressionPolicy
from specops.regression.table import HEADERS, verdict_markdown
from specops.regression.verdict import evaluate
from tests.unit.regression.runs import baseline, run


def test_the_markdown_table_has_the_figures_and_every_note_in_a_list_under_it():
    verdicts = evaluate([*baseline(2), run(2, speedup=1.2)], RegressionPolicy())
    lines = verdict_markdown(verdicts).splitlines()
    assert lines[0] == "| " + " | ".join(HEADERS[1:-1]) + " |"  # the profile is the artifact's heading
    speedup = next(line for line in lines if line.startswith("| speedup |"))
    assert speedup.count("|") == len(HEADERS) - 1 and "insufficient-data" in speedup
    notes = lines[lines.index("Notes:") + 2:]
    assert notes[0] == "- **speedup** (insufficient-data): needs 1 more run" and len(notes) == len(verdicts)
    assert verdict_markdown([]) == "no verdicts (no runs)"

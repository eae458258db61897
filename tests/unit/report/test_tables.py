"""specops/report/tables.py: the comparison table artifact and the report table in people's words, the speedup first;
the per-prompt spread line."""
from __future__ import annotations

from specops.report.tables import markdown_table, report_markdown, spread_text, summary_rows, table_artifact
from specops.results.metrics import PromptSpread
from specops.results.model import Status
from tests.results_factory import run_result


def test_the_table_artifact_has_human_column_names_the_speedup_first_and_no_empty_column():
    rows = table_artifact(run_result())
    assert [r["variant"] for r in rows] == ["speculative", "base"]
    assert list(rows[0])[:4] == ["variant", "method", "speedup (95%)", "tokens/s"]
    assert rows[0]["speedup (95%)"] == "1.36x (1.31-1.41)" and rows[1]["speedup (95%)"] == "1.00x (the base)"
    assert all(" " in column or column.isalpha() or "/" in column for column in rows[0]), list(rows[0])  # no snake_case
    assert "GPU J/1k tokens" not in rows[0]  # no variant measured it
    assert rows[0]["verdict"] == "VALID" and rows[0]["status"] == "ok"
    assert all(isinstance(value, str) for row in rows for value in row.values())  # as the report prints them
    failed = table_artifact(run_result(status=Status.FAILED).model_copy(update={"variants": []}))
    assert failed == [{"variant": "-", "verdict": failed[0]["verdict"], "status": "failed"}]


def test_the_report_table_puts_the_speedup_after_the_variant_and_matches_the_artifact():
    result = run_result()
    lines = markdown_table(result).splitlines()
    assert [c.strip() for c in lines[0].strip("|").split("|")] == list(summary_rows(result)[0])
    assert lines[2].startswith("| speculative | ngram | 1.36x (1.31-1.41) |")
    no_interval = result.model_copy(update={"speedup": result.speedup.model_copy(update={"low": None, "high": None})})
    assert "| 1.36x (no interval) |" in markdown_table(no_interval)


def _with_spread(by_prompt: dict[int, float] | None, **changes):
    result = run_result()
    spread = PromptSpread(by_prompt=by_prompt) if by_prompt is not None else None
    return result.model_copy(update={"speedup": result.speedup.model_copy(update={"per_prompt": spread}), **changes})


def test_the_spread_line_names_the_quantiles_and_the_prompt_with_the_largest_speedup():
    by_prompt = {p: 1.0 + 0.01 * p for p in range(8)} | {5: 5.0}
    line = spread_text(_with_spread(by_prompt))
    assert line == ("speedup per prompt (its base over speculative seconds per output token): 8 prompts: min 1.00x, "
                    "p25 1.02x, median 1.04x, p75 1.06x, max 5.00x at prompt 5")
    md = report_markdown(_with_spread(by_prompt)).splitlines()
    assert md[md.index(line) - 2].startswith("**VALID** · speedup vs base: **1.36x")  # just under the headline


def test_without_a_pairing_of_several_prompts_the_report_says_why_there_is_no_spread():
    assert spread_text(_with_spread({3: 1.4})) == "no per-prompt spread: one prompt was measured on both variants"
    assert spread_text(_with_spread(None, schema_version=5)) == \
        "no per-prompt spread: not in the run's record (schema 5; kept since 6)"
    assert spread_text(run_result(speedup=None)) is None


def test_the_replays_prediction_is_shown_beside_the_engines_count_with_the_gap_signed_measured_minus_predicted():
    from specops.report.tables import comparison_frame
    from specops.results.predicted import Predicted

    result = run_result()  # the engine counted 1000 accepted over 400 drafted steps: 3.50 per step
    assert "predicted" not in report_markdown(result)
    predicted = Predicted(setting="ngram min 2 max 3 K 4", accepted_per_step=3.25, tokens_per_step=2.9,
                          source="specops replay: vLLM's n-gram matcher")
    result = result.model_copy(update={"predicted": predicted})
    line = next(x for x in report_markdown(result).splitlines() if x.startswith("Accepted/step predicted"))
    assert "predicted 3.25, measured 3.50 (measured - predicted +0.25)" in line and "ngram min 2 max 3 K 4" in line
    frame = comparison_frame(result).set_index("variant")
    assert frame.loc["speculative", "predicted_accepted_per_step"] == 3.25
    assert frame["predicted_accepted_per_step"].isna()["base"]

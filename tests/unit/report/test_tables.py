"""specops/report/tables.py (rounding): the comparison table artifact shows figures with the digits their meaning needs."""
from __future__ import annotations

from specops.report.tables import comparison_frame, decimals, report_markdown, rounded, rounded_records, spread_text
from specops.results.metrics import PromptSpread
from tests.results_factory import run_result


def test_each_column_is_rounded_by_what_it_measures():
    assert rounded("speedup_vs_base", 1.3624999) == 1.362
    assert rounded("acceptance_rate", 0.62500001) == 0.625
    assert rounded("mean_accepted_per_step", 1.6451612) == 1.65
    assert rounded("output_token_throughput_tok_s", 11.38780641221017) == 11.4
    assert rounded("request_throughput_req_s", 0.0889672) == 0.09
    assert rounded("time_to_first_token_ms_p50", 120.04999) == 120.0
    assert rounded("engine_step_s", 0.0645161290) == 0.0645
    assert rounded("draft_s_per_step", 0.000645161) == 0.0006
    assert rounded("num_draft_tokens", 1600.0) == 1600 and isinstance(rounded("num_draft_tokens", 1600.0), int)
    assert rounded("gpu_j_per_1k_tokens", 812.7) == 813
    assert rounded("something_new", 3.14159265) == 3.142  # no rule: 4 significant digits
    assert rounded("something_new", 0.000123456) == 0.0001235
    assert rounded("status", "ok") == "ok" and rounded("valid", None) is None and rounded("x", float("nan")) is None
    assert decimals("variant") is None


def test_the_table_artifact_of_a_run_shows_no_long_floats():
    records = rounded_records(comparison_frame(run_result()))
    assert [r["variant"] for r in records] == ["speculative", "base"]
    for record in records:
        for column, value in record.items():
            if isinstance(value, float):
                assert len(repr(value).split(".")[1]) <= 4, (column, value)
    assert records[0]["speedup_vs_base"] == 1.36 and records[1]["speedup_low"] is None


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

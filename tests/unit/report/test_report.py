"""Report files rendered from a RunResult alone (the figures here are inputs, not measurements)."""
from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pandas as pd

from specops.acceptance.model import Acceptance
from specops.report.plot import _per_prompt_panel
from specops.report.writer import summary, write_report
from specops.results.durable import REPORT_NAMES
from specops.results.metrics import PromptSpread
from specops.results.model import RunResult, Status
from specops.results.paired import Design
from tests.results_factory import run_result


def test_report_files_come_from_the_run_result(tmp_path):
    result = run_result()
    files = write_report(result, tmp_path)
    md = files.report_md.read_text()
    assert "**VALID**" in md and ("speedup vs base: **1.36x faster (95% interval 1.31-1.41; 4 prompts x 2 rounds, "
                                  "round blocks)** (paired output tokens/s, genai-perf)") in md
    assert "- speedup: 95% interval over rounds (t-interval over 2 rounds" in md  # its unit, with the details
    assert "| speculative | ngram | 1.36x (1.31-1.41) | 21.80 |" in md and "| base | none | 1.00x (the base) | 16.00 |" in md
    # CPU-seconds per 1,000 output tokens: 50 s / 1024 tokens and 64 s / 1024 tokens
    assert "48.8 CPU-seconds per 1,000 output tokens speculative vs 62.5 base (0.78x)" in md
    assert "GPU energy: not measured (no NVIDIA GPU)." in md
    assert "cached: download hit, render miss" in md
    frame = pd.read_csv(files.comparison_csv)
    assert list(frame["variant"]) == ["speculative", "base"]
    spec = frame.iloc[0]
    assert spec["speedup_vs_base"] == 1.36 and spec["speedup_low"] == 1.31 and spec["speedup_high"] == 1.41
    assert spec["mean_accepted_per_step"] == 3.5  # 1 + 1000 accepted / 400 verification steps
    assert round(spec["cpu_s_per_1k_tokens"], 3) == 48.828 and frame.iloc[1]["speedup_vs_base"] == 1.0
    assert set(frame["valid"]) == {"VALID"} and set(frame["status"]) == {"ok"}
    assert RunResult.model_validate(json.loads(files.manifest_json.read_text())) == result
    assert files.plot_png.stat().st_size > 1000
    # What `specops plan` promises a run writes (it reads REPORT_NAMES) is what the writer wrote.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(REPORT_NAMES)


def test_failed_run_report_names_the_step_the_error_and_the_logs(tmp_path):
    result = run_result(status=Status.FAILED)
    files = write_report(result, tmp_path)
    md = files.report_md.read_text()
    assert "**FAILED**" in md and "The run FAILED at **serve (speculative)**:" in md
    assert "```text\nTimeoutError: server not ready in 120 s\n```" in md and "/logs/serve.log" in md
    frame = pd.read_csv(files.comparison_csv)
    assert list(frame["status"]) == ["failed"] and list(frame["valid"]) == ["FAILED"]
    assert summary(result).startswith("FAILED at serve;")


def test_invalid_run_says_where_outputs_differ(tmp_path):
    md = write_report(run_result(status=Status.INVALID), tmp_path).report_md.read_text()
    assert "**INVALID**" in md and "2 of 8 outputs differ" in md


def test_report_says_why_acceptance_is_unavailable_and_carries_backend_notes(tmp_path):
    result = run_result()
    why = Acceptance.unavailable("nvcr.io/nvidia/tritonserver:26.02-vllm-python-py3", "V1 engine logs nothing here")
    spec = result.variants[0].model_copy(update={"acceptance": why})
    bench = result.benchmark.model_copy(update={"notes": ["output length not pinned on X: because"]})
    result = result.model_copy(update={"variants": [spec, result.variants[1]], "benchmark": bench})
    files = write_report(result, tmp_path)
    md = files.report_md.read_text()
    assert ("acceptance unavailable on nvcr.io/nvidia/tritonserver:26.02-vllm-python-py3: V1 engine logs nothing "
            "here") in md
    assert "- output length not pinned on X: because" in md
    frame = pd.read_csv(files.comparison_csv)
    assert frame.loc[0, "acceptance_source"].startswith("acceptance unavailable on ")
    assert pd.isna(frame.loc[0, "acceptance_rate"])


def test_the_report_names_the_pairing_design_and_why_requests_were_not_interleaved(tmp_path):
    blocks = run_result(speedup=1.36)
    blocks = blocks.model_copy(update={"benchmark": blocks.benchmark.model_copy(
        update={"design_note": "genai-perf drives one server per run"})})
    md = write_report(blocks, tmp_path / "blocks").markdown
    assert "round blocks, alternating A B A B (not requests interleaved: genai-perf drives one server per run)" in md
    assert "95% interval over rounds (t-interval over 2 rounds" in md
    assert md.index("speedup vs base: **") < md.index("95% interval over rounds")  # the headline first, then why
    paired = run_result(speedup=1.36)
    paired = paired.model_copy(update={
        "benchmark": paired.benchmark.model_copy(update={"design": Design.REQUESTS}),
        "speedup": paired.speedup.model_copy(update={"design": Design.REQUESTS})})
    md = write_report(paired, tmp_path / "paired").markdown
    assert "requests interleaved between the variants (each prompt on both, back to back)" in md
    assert "2 rounds, requests interleaved)**" in md


def test_a_speedup_without_an_interval_says_why_in_the_headline_and_how_to_get_one_in_the_details(tmp_path):
    why = ("none: one round block per variant is one unit of noise; set benchmark.rounds >= 2, or interleave "
           "requests (benchmark.pairing, with a tool that can)")
    result = run_result(speedup=1.33)
    result = result.model_copy(update={"speedup": result.speedup.model_copy(
        update={"low": None, "high": None, "rounds": 1, "resampled": why})})
    md = write_report(result, tmp_path).markdown
    headline = md.splitlines()[2]
    assert headline == ("**VALID** · speedup vs base: **1.33x faster (no interval: one round block per variant; "
                        "4 prompts, round blocks)** (paired output tokens/s, genai-perf)")
    assert "benchmark.rounds" not in headline and "interval over none" not in md
    assert ("- speedup: no 95% interval: one round block per variant is one unit of noise; set benchmark.rounds >= 2, "
            "or interleave requests (benchmark.pairing, with a tool that can)") in md
    assert summary(result).startswith("VALID; speedup vs base 1.33x faster (no interval: one round block per variant;")


def test_the_plot_draws_each_prompts_speedup_or_says_why_not():
    result = run_result()
    spread = PromptSpread(by_prompt={0: 1.1, 1: 0.9, 2: 4.8})
    fig, (drawn, empty) = plt.subplots(1, 2)
    _per_prompt_panel(drawn, result.model_copy(update={"speedup": result.speedup.model_copy(
        update={"per_prompt": spread})}))
    assert sorted(bar.get_height() for bar in drawn.patches) == [0.9, 1.1, 4.8]
    assert [line.get_ydata()[0] for line in drawn.lines] == [1.0, 1.36]  # the base and the pooled headline
    _per_prompt_panel(empty, result)
    assert not empty.patches and "no per-prompt spread" in empty.texts[0].get_text()
    plt.close(fig)

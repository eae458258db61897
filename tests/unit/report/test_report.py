"""Report files from variant results (figures here are inputs, not measurements)."""
from __future__ import annotations

import json

import pandas as pd

from specops.lossless import compare_outputs
from specops.profile.loader import load_profile
from specops.report.results import Acceptance, VariantResult
from specops.report.tables import speedup, verdict
from specops.report.writer import write_report
from specops.rundir import RunDir
from specops.sources.base import ModelArtifact


def results():
    base = VariantResult("base", "none", "base", {"output_token_throughput_tok_s": 10.0, "request_latency_ms_p50": 900.0})
    spec = VariantResult("speculative", "ngram", "speculative",
                         {"output_token_throughput_tok_s": 15.0, "request_latency_ms_p50": 600.0},
                         Acceptance("test", num_drafts=10, num_draft_tokens=40, num_accepted_tokens=20))
    return [spec, base]


def test_speedup_and_acceptance_definitions():
    spec, _ = results()
    assert speedup(results()) == 1.5
    assert spec.acceptance.acceptance_rate == 0.5
    assert spec.acceptance.mean_accepted_per_step == 3.0  # 1 + 20 accepted / 10 steps
    later = Acceptance("test", 15, 60, 26)
    assert later.since(spec.acceptance).num_accepted_tokens == 6
    # per-response metrics only specops' own requests ask for: kept whole, not differenced to zero
    own = Acceptance("check requests only", 15, 60, 26, covers_benchmark=False)
    assert own.since(Acceptance("check requests only", 15, 60, 26, covers_benchmark=False)) is own


def test_verdict_reports_divergence():
    status, reasons = verdict(compare_outputs(["abc"], ["abd"]))
    assert status == "INVALID" and "first at prompt 0, character 2" in reasons[0]
    assert verdict(None)[0] == "UNCHECKED"


def test_write_report_files(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    run = RunDir.create("ngram-local", "r1")
    run.mark_started()
    run.add_timing("benchmark", "base", 2.0)
    run.write_json("servers/base.json", {"pid": 1, "tool": "tritonserver", "version": "2.51.0"})
    loaded = load_profile("ngram-local")
    target = ModelArtifact(tmp_path, "embedded:smollm2-135m", "ab" * 32, "wheelsha")
    rep = write_report(run, loaded, results(), compare_outputs(["x"], ["x"]), {"target": target})
    assert rep.status == "VALID" and rep.speedup == 1.5
    frame = pd.read_csv(rep.comparison_csv)
    assert list(frame["variant"]) == ["speculative", "base"]
    assert frame.loc[0, "speedup_vs_base"] == 1.5 and frame.loc[0, "mean_accepted_per_step"] == 3.0
    md = rep.report_md.read_text()
    assert "**VALID**" in md and "1.50x" in md and "| speculative | ngram | 15.00 |" in md
    manifest = json.loads(rep.manifest_json.read_text())
    assert manifest["models"]["target"]["sha256"] == "ab" * 32
    assert manifest["packages"]["prefect"] and manifest["profile_sha256"] == loaded.sha256
    assert manifest["tools"] == {"tritonserver": "2.51.0"}
    assert rep.plot_png.stat().st_size > 1000


def test_report_says_why_acceptance_is_unavailable_and_carries_backend_notes(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    run = RunDir.create("ngram-local", "r2")
    run.mark_started()
    spec, base = results()
    why = Acceptance.unavailable("nvcr.io/nvidia/tritonserver:26.02-vllm-python-py3", "V1 engine logs nothing here")
    spec.acceptance = why
    assert why.since(Acceptance("x", 1, 2, 3)) is why and why.acceptance_rate is None
    target = ModelArtifact(tmp_path, "embedded:smollm2-135m", "ab" * 32, "wheelsha")
    rep = write_report(run, load_profile("ngram-local"), [spec, base], compare_outputs(["x"], ["x"]),
                       {"target": target}, ["output length not pinned on X: because"])
    md = rep.report_md.read_text()
    assert ("acceptance unavailable on nvcr.io/nvidia/tritonserver:26.02-vllm-python-py3: V1 engine logs nothing "
            "here") in md
    assert "- output length not pinned on X: because" in md
    frame = pd.read_csv(rep.comparison_csv)
    assert frame.loc[0, "acceptance_source"].startswith("acceptance unavailable on ")

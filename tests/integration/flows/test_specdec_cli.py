"""`specops run ngram-local` end to end on real components (tritonserver, genai-perf, SmolLM2),
shrunk by overrides; then the same run again, which must take download and render from cache."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from tests.integration.support import REPO_ROOT, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHRINK = ["benchmark.num_requests=3", "benchmark.warmup_requests=0", "benchmark.output_tokens=24",
          "comparison.lossless_prompts=3", "comparison.lossless_max_tokens=32"]


def specops_run(env, run_id: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "specops.cli", "run", "ngram-local", "--run-id", run_id]
    for item in SHRINK:
        args += ["--set", item]
    return subprocess.run(args, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1200)


@pytest.fixture(scope="module")
def two_runs(embedded_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("specdec-cli")
    env = service_env(tmp)
    first = specops_run(env, "first")
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
    second = specops_run(env, "second")
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-4000:]
    return tmp / "artifacts" / "ngram-local", first, second


def test_report_has_measured_rows_speedup_and_verdict(two_runs):
    runs, first, _ = two_runs
    run = runs / "first"
    frame = pd.read_csv(run / "comparison.csv")
    assert set(frame["variant"]) == {"speculative", "base"}
    assert (frame["output_token_throughput_tok_s"] > 0).all()
    assert (frame["request_count"] == 3).all()
    spec = frame[frame.variant == "speculative"].iloc[0]
    base = frame[frame.variant == "base"].iloc[0]
    assert spec["speedup_vs_base"] == pytest.approx(
        spec["output_token_throughput_tok_s"] / base["output_token_throughput_tok_s"])
    assert spec["num_draft_tokens"] > 0 and 0 <= spec["num_accepted_tokens"] <= spec["num_draft_tokens"]
    assert frame["valid"].iloc[0] == "VALID"
    report = (run / "report.md").read_text()
    assert "**VALID**" in report and "speedup vs base" in report
    assert f"report: {run / 'report.md'}" in first.stdout
    assert "orchestration overhead" in first.stdout


def test_run_directory_holds_everything(two_runs):
    run = two_runs[0] / "first"
    for rel in ["profile.yaml", "manifest.json", "comparison.png", "logs/server-speculative.log",
                "logs/server-base.log", "logs/genai-perf-base.log", "check/lossless.json",
                "repository/speculative/speculative/config.pbtxt", "repository/base/base/1/model.py"]:
        assert (run / rel).is_file(), rel
    assert list((run / "genai-perf" / "speculative").rglob("profile_export_genai_perf.json"))
    manifest = json.loads((run / "manifest.json").read_text())
    target = manifest["models"]["target"]
    assert target["source"] == "embedded:smollm2-135m" and len(target["sha256"]) == 64 and target["revision"]
    assert manifest["packages"]["genai-perf"] == "0.0.16" and manifest["packages"]["tritonclient"] == "2.51.0"
    assert manifest["tools"]["tritonserver"].startswith("2.51")
    lossless = json.loads((run / "check" / "lossless.json").read_text())
    assert lossless["valid"] and lossless["compared"] == 3


def test_second_run_takes_download_and_render_from_cache(two_runs):
    _, first, second = two_runs
    cached = re.findall(r"Task run '(download_model|render_repository)-\w+' - Finished in state Cached", second.stdout + second.stderr)
    assert sorted(cached) == ["download_model", "render_repository", "render_repository"], second.stdout[-3000:]
    fresh = re.findall(r"Task run '(download_model|render_repository)-\w+' - Finished in state Completed", first.stdout + first.stderr)
    assert len(fresh) == 3


def test_no_server_left_behind(two_runs):
    import psutil

    runs = str(two_runs[0])
    leftovers = [p.info for p in psutil.process_iter(["pid", "name", "cmdline"])
                 if runs in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []

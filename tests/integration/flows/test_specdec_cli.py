"""`specops run ngram-local` end to end on real components (tritonserver, genai-perf, SmolLM2, SQLite and
PostgreSQL), shrunk by overrides. Four runs share one artifacts root and model cache:

- first: 2 interleaved rounds, recorded into a real PostgreSQL ($SPECOPS_RESULTS_URL);
- second: the same profile again (one round, one lossless prompt: CI time), recorded into the default SQLite
  file; download and render cached;
- retuned: one speculative setting changed, so only the speculative repository is rendered again;
  measured by the second benchmark tool, AIPerf, through the same pipeline, which interleaves the
  variants' requests (benchmark.pairing auto);
- broken: a real fault (a readiness deadline no server meets): FAILED at serve, exit 1, still reported.

An INVALID run (exit 3, reported, recorded, Failed in Prefect) is one of the two runs of
tests/integration/flows/test_slots.py.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import psutil
import pytest
from sqlalchemy import create_engine, text

from specops.results.paired import Speedup
from tests.integration.support import REPO_ROOT, SHARED_CACHE, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

URL = "http://artifacts.test:4201"
# genai-perf named (the profiles' default is AIPerf): these runs check its round blocks; "retuned" asks for AIPerf.
SHRINK = ["benchmark.num_requests=3", "benchmark.warmup_requests=0", "benchmark.output_tokens=24",
          "comparison.lossless_prompts=3", "comparison.lossless_max_tokens=32", "benchmark.tool=genai-perf"]
RUNS = {
    "first": ["benchmark.rounds=2", "benchmark.interleave=true"],
    "second": ["comparison.lossless_prompts=1"],  # after SHRINK's 3: the later setting wins
    "retuned": ["benchmark.rounds=2", "benchmark.interleave=true", "method.prompt_lookup_max=2",
                "benchmark.tool=aiperf"],
    # The embedded model takes seconds to load; nothing is ready within a tenth of one.
    "broken": ["serving.ready_timeout_s=0.1"],
}


def specops(env, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def specops_run(env, run_id: str) -> subprocess.CompletedProcess:
    args = ["run", "ngram-local", "--run-id", run_id]
    for item in SHRINK + RUNS[run_id]:
        args += ["--set", item]
    return specops(env, *args)


@pytest.fixture(scope="module")
def runs(embedded_model, tmp_path_factory, postgres_url):
    tmp = tmp_path_factory.mktemp("specdec-cli")
    # A cache of its own holding only the converted model (hard links: no 540 MB copy, and the same inodes and
    # ctimes its manifest records), so the first run finds nothing else cached whatever ran before.
    shutil.copytree(SHARED_CACHE / "embedded", tmp / "cache" / "embedded", copy_function=os.link)
    env = service_env(tmp, SPECOPS_CACHE=str(tmp / "cache"))
    # first: its artifacts embed and link its files over SPECOPS_ARTIFACTS_URL (nothing serves it here: what the
    # artifacts say is read); the others keep file:// links
    done = {"first": specops_run(env | {"SPECOPS_RESULTS_URL": postgres_url, "SPECOPS_ARTIFACTS_URL": URL}, "first")}
    for run_id in ("second", "retuned", "broken"):
        done[run_id] = specops_run(env, run_id)
    return tmp / "artifacts", env, postgres_url, done


def output(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout[-4000:] + proc.stderr[-4000:]


def status(artifacts, run_id: str) -> dict:
    return json.loads((artifacts / "ngram-local" / run_id / "status.json").read_text())


def manifest(artifacts, run_id: str) -> dict:
    return json.loads((artifacts / "ngram-local" / run_id / "manifest.json").read_text())


def test_report_has_measured_rows_and_the_speedup_with_its_interval(runs):
    artifacts, _, _, done = runs
    assert done["first"].returncode == 0, output(done["first"])
    run = artifacts / "ngram-local" / "first"
    frame = pd.read_csv(run / "comparison.csv")
    assert list(frame["variant"]) == ["speculative", "base"]
    assert (frame["output_token_throughput_tok_s"] > 0).all() and (frame["request_count"] == 6).all()
    spec = frame.iloc[0]
    assert spec["speedup_low"] <= spec["speedup_vs_base"] <= spec["speedup_high"]
    assert spec["num_draft_tokens"] > 0 and 0 <= spec["num_accepted_tokens"] <= spec["num_draft_tokens"]
    assert (frame["cpu_s_per_1k_tokens"] > 0).all() and frame["valid"].iloc[0] == "VALID"
    result = manifest(artifacts, "first")
    s = result["speedup"]
    assert (s["prompts"], s["rounds"], s["design"]) == (3, 2, "rounds")  # genai-perf: round blocks
    assert s["resampled"].startswith("rounds (t-interval over 2 rounds")
    assert result["benchmark"]["design_note"] == "genai-perf drives one server per run"
    assert len(result["variants"][0]["samples"]) == 6 and result["status"] == "ok"
    assert status(artifacts, "first")["state"] == "ok"
    for variant in result["variants"]:  # the benchmark window only: smoke and check requests subtracted
        assert variant["acceptance"]["num_emitted_tokens"] == 3 * 24 * 2, variant["name"]
    report = (run / "report.md").read_text()
    h = Speedup.model_validate(s).text()
    assert f"95% interval {s['low']:.2f}-{s['high']:.2f}" in h and h.endswith("; 3 prompts x 2 rounds, round blocks)")
    assert f"**{h}**" in report
    assert "CPU-seconds per 1,000 output tokens speculative vs" in report
    assert f"report: {run / 'report.md'}" in done["first"].stdout
    # Its costs add up (issue 51): the CLI's line over the command's wall, the report's over the flow's
    cli_line = next(line for line in done["first"].stdout.splitlines() if line.startswith("specops run: "))
    flow_line = next(line for line in report.splitlines() if line.startswith("- flow wall "))
    for line in (cli_line, flow_line):
        wall, parts = re.search(r"([\d.]+)s = (.*)", line).groups()
        terms = {label.strip(): float(v) for label, v in re.findall(r"([a-z][^+=(]*?) (-?[\d.]+)s", parts)}
        assert abs(sum(terms.values()) - float(wall)) <= 1.0 and min(terms.values()) >= 0, line
        assert {"serve", "check", "benchmark", "orchestration overhead"} <= set(terms), line
    print(cli_line, flow_line, sep="\n")


def test_run_directory_holds_everything(runs):
    artifacts = runs[0]
    run = artifacts / "ngram-local" / "first"
    for rel in ["profile.yaml", "manifest.json", "comparison.png", "logs/server-speculative.log",
                "logs/server-base.log", "logs/bench-base-round1.log", "check/lossless.json",
                "repository/speculative/speculative/config.pbtxt", "repository/base/base/1/model.py"]:
        assert (run / rel).is_file(), rel
    assert list((run / "bench" / "speculative" / "round-1").rglob("profile_export.json"))
    result = manifest(artifacts, "first")
    target = result["models"][0]
    assert target["source"] == "embedded:smollm2-135m" and len(target["sha256"]) == 64 and target["revision"]
    assert result["software"]["packages"]["genai-perf"] == "0.0.16"
    assert result["served"]["servers"]["tritonserver"].startswith("2.51")
    assert result["host"]["cores"] >= 1 and result["host"]["cpu_model"]
    lossless = json.loads((run / "check" / "lossless.json").read_text())
    assert lossless["valid"] and lossless["compared"] == 3


def test_runs_are_recorded_in_postgresql_and_sqlite(runs):
    artifacts, _, postgres_url, done = runs
    with create_engine(postgres_url).connect() as db:
        rows = db.execute(text("SELECT run_id, status, speedup FROM runs")).all()
    assert [(r.run_id, r.status) for r in rows] == [("first", "ok")] and rows[0].speedup > 0
    with create_engine(f"sqlite:///{artifacts / 'results.db'}").connect() as db:
        rows = dict(db.execute(text("SELECT run_id, status FROM runs")).all())
    assert rows == {"second": "ok", "retuned": "ok", "broken": "failed"}


def test_a_changed_speculative_setting_renders_again_while_the_download_stays_cached(runs):
    artifacts, _, _, done = runs
    assert done["second"].returncode == 0 and done["retuned"].returncode == 0, output(done["retuned"])
    first, second, retuned = (manifest(artifacts, r)["cached_steps"] for r in ("first", "second", "retuned"))
    assert first == {"download target": True, "build speculative": False, "render speculative": False,
                     "build base": False, "render base": False}, first  # its cache held the converted model only
    assert all(second.values()), second
    assert retuned == {"download target": True, "build speculative": False, "render speculative": False,
                       "build base": True, "render base": True}


def test_a_second_benchmark_tool_runs_through_the_same_pipeline(runs):
    artifacts, _, _, done = runs
    assert done["retuned"].returncode == 0, output(done["retuned"])
    result = manifest(artifacts, "retuned")
    assert (result["benchmark"]["tool"], result["benchmark"]["tool_version"]) == ("aiperf", "0.13.0")
    assert result["benchmark"]["api"] == "triton/generate"
    s = result["speedup"]
    assert (s["prompts"], s["rounds"]) == (3, 2) and s["low"] <= s["point"] <= s["high"]
    # AIPerf interleaves the variants' requests: one run per round, the prompts the interval's units
    assert (result["benchmark"]["design"], s["design"]) == ("requests", "requests")
    assert s["resampled"].startswith("prompts (t-interval over 3 prompts")
    for variant in result["variants"]:
        assert len(variant["samples"]) == 6 and variant["metrics"]["request_count"] == 6
        assert variant["acceptance"]["num_emitted_tokens"] == 3 * 24 * 2, variant["name"]
    exports = sorted((artifacts / "ngram-local" / "retuned" / "bench").glob("*/round-*/aiperf/profile_export.jsonl"))
    assert [e.parent.parent.parent.name for e in exports] == ["interleaved", "interleaved"]  # 1 run per round
    assert all(len(e.read_text().splitlines()) == 2 * 3 for e in exports)  # 3 prompts on each of 2 servers


def test_a_failed_run_is_reported_and_recorded(runs):
    artifacts, _, _, done = runs
    broken = done["broken"]
    assert broken.returncode == 1, output(broken)
    assert "ngram-local FAILED at serve (speculative)" in broken.stderr
    run = artifacts / "ngram-local" / "broken"
    report = (run / "report.md").read_text()
    assert "**FAILED**" in report and "The run FAILED at **serve (speculative)**" in report
    assert str(run / "logs" / "server-speculative.log") in report
    result = manifest(artifacts, "broken")
    assert result["status"] == "failed" and result["failure"]["step"] == "serve" and not result["variants"]
    state = status(artifacts, "broken")
    assert (state["state"], state["step"], state["variant"]) == ("failed", "serve", "speculative")
    assert "not ready within" in state["error"]


def test_history_and_compare(runs):
    _, env, _, _ = runs
    history = specops(env, "history", "ngram-local", timeout=120)
    assert history.returncode == 0, output(history)
    lines = history.stdout.splitlines()
    order = [next(i for i, line in enumerate(lines) if f" {r} " in line) for r in ("broken", "second")]
    assert order == sorted(order)  # newest first
    assert "FAILED" in lines[order[0]]
    assert "(no interval: one round block per variant; " in lines[order[1]], lines[order[1]]
    assert " prompts, round blocks)" in lines[order[1]], lines[order[1]]
    compare = specops(env, "compare", "second", "retuned", timeout=120)
    assert compare.returncode == 0, output(compare)
    assert "second" in compare.stdout and "retuned" in compare.stdout
    assert any(line.startswith("*") and "overrides" in line for line in compare.stdout.splitlines())
    missing = specops(env, "compare", "second", "nope", timeout=120)
    assert missing.returncode == 2 and "nope" in missing.stderr  # a run id that names no run: bad input


# The runs' Prefect API is private and stopped with each run; its database stays under PREFECT_HOME.
# The same server (cli/prefect_api.py) is started again over it, and asked what each run left there.
READ_API = """
import asyncio, json
from cli.prefect_api import prefect_api
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, LogFilter, LogFilterFlowRunId

async def read():
    found = {}
    async with get_client() as client:
        for run in await client.read_flow_runs():
            artifacts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run.id])))
            logs, offset = [], 0
            while page := await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])),
                                                 limit=200, offset=offset):
                logs += [[log.name, log.message] for log in page]
                offset += len(page)
            found[run.parameters.get("run_id")] = {
                "artifacts": [{"type": a.type, "key": a.key, "data": a.data, "description": a.description}
                              for a in artifacts],
                "logs": [entry for entry in logs if entry[0].startswith("specops")]}
    return found

with prefect_api():
    print(json.dumps(asyncio.run(read())))
"""


def test_the_prefect_ui_shows_progress_the_run_directory_and_specops_log_lines(runs):
    artifacts, env, _, _ = runs
    done = subprocess.run([sys.executable, "-c", READ_API], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    first = json.loads(done.stdout.splitlines()[-1])["first"]
    progress = {a["description"].split(":")[0]: a["data"] for a in first["artifacts"] if a["type"] == "progress"}
    assert progress == {"benchmark of speculative": 100.0, "benchmark of base": 100.0}, first["artifacts"]
    run_dir = (artifacts / "ngram-local" / "first").resolve()
    [link] = [a for a in first["artifacts"] if a["key"] == "ngram-local-run-dir"]
    assert link["data"].endswith(f":{run_dir}]({URL}/ngram-local/first/)"), link
    [report] = [a for a in first["artifacts"] if a["key"] == "ngram-local-report"]
    assert f"![comparison.png]({URL}/ngram-local/first/comparison.png)" in report["data"], report["data"][:600]
    [table] = [json.loads(a["data"]) for a in first["artifacts"] if a["key"] == "ngram-local-comparison"]
    assert all(len(repr(v).partition(".")[2]) <= 4 for row in table for v in row.values() if isinstance(v, float))
    second = json.loads(done.stdout.splitlines()[-1])["second"]
    [link] = [a for a in second["artifacts"] if a["key"] == "ngram-local-run-dir"]
    assert link["data"].endswith(f"({(artifacts / 'ngram-local' / 'second').resolve().as_uri()})"), link
    messages = [message for name, message in first["logs"] if name == "specops.backends.triton_server"]
    assert any(m.startswith("tritonserver ready in") for m in messages), first["logs"][:20]


def test_no_server_left_behind(runs):
    root = str(runs[0])
    leftovers = [p.info for p in psutil.process_iter(["pid", "name", "cmdline"])
                 if root in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []

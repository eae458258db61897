"""AIPerf 0.13.0 (from .venv-aiperf) against a real tritonserver's HTTP generate_stream (see conftest.py).

Set SPECOPS_CAPTURE_AIPERF_EXPORT=<dir> to keep the exports of the full run (that is how
tests/unit/bench/fixtures/aiperf/ was captured).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time

import psutil
import pytest

from specops.bench import aiperf_tool
from specops.bench.aiperf_tool import AIPerf
from specops.bench.prompts import load_prompts
from specops.bench.target import Api, BenchTarget
from specops.bench.tool import BenchJob, BenchToolError

pytestmark = pytest.mark.integration

NUM_REQUESTS = 5
WARMUP = 1
OUTPUT_TOKENS = 12


@pytest.fixture(scope="module", autouse=True)
def _aiperf_ready():
    problems = AIPerf().preflight()
    if problems:
        pytest.fail("AIPerf cannot run here:\n" + "\n".join(problems))


def _job(server, tokenizer_dir, tmp_path, **overrides) -> BenchJob:
    prompts = load_prompts("humaneval", limit=NUM_REQUESTS + WARMUP)
    target = BenchTarget(model=server.model, endpoints={Api.TRITON_GENERATE: f"http://{server.endpoint.http_url}"})
    fields = dict(target=target, api=Api.TRITON_GENERATE, tokenizer=tokenizer_dir, prompts=prompts,
                  requests=NUM_REQUESTS, warmup=WARMUP, output_tokens=OUTPUT_TOKENS, concurrency=1,
                  artifact_dir=tmp_path / "round-0" / "aiperf", log_path=tmp_path / "aiperf.log", timeout_s=300,
                  round=1)
    return BenchJob(**(fields | overrides))


def test_every_flag_specops_passes_is_in_aiperfs_own_help(standin_server, tokenizer_dir, tmp_path):
    cmd = AIPerf().command(_job(standin_server, tokenizer_dir, tmp_path))
    done = subprocess.run([*cmd[:2], "--help"], capture_output=True, text=True, timeout=120,
                          env=aiperf_tool.tool_env() | {"COLUMNS": "300"})
    assert done.returncode == 0, done.stderr[-2000:]
    known = set(re.findall(r"(--[a-z][a-z0-9-]+)", done.stdout))
    assert {flag for flag in cmd if flag.startswith("--")} <= known


def test_run_pairs_every_measured_request_with_its_prompt(standin_server, tokenizer_dir, tmp_path):
    job = _job(standin_server, tokenizer_dir, tmp_path)
    before = len(standin_server.record_path.read_text().splitlines()) if standin_server.record_path.exists() else 0
    lines: list[str] = []
    t0 = time.monotonic()
    run = AIPerf().run(job, on_line=lines.append)
    print(f"aiperf: {NUM_REQUESTS} requests + {WARMUP} warmup in {time.monotonic() - t0:.1f}s")

    metrics, samples = run.metrics, run.samples
    assert metrics.request_count == len(samples) == NUM_REQUESTS  # warm-up requests are not samples
    assert sorted(s.prompt for s in samples) == list(range(WARMUP, WARMUP + NUM_REQUESTS))  # sequential
    assert all(s.round == 1 and 0 < s.ttft_s <= s.latency_s for s in samples)
    assert metrics.output_token_throughput_tok_s > 0 and metrics.inter_token_latency_ms_avg > 0
    assert sum(s.output_tokens for s in samples) / len(samples) == pytest.approx(metrics.output_sequence_length_avg)
    mean_latency_ms = 1000 * sum(s.latency_s for s in samples) / len(samples)
    assert mean_latency_ms == pytest.approx(metrics.request_latency_ms_avg, rel=1e-6)
    assert lines  # AIPerf's output reaches the progress callback
    assert job.log_path.read_text().startswith("$ ")  # and its log starts with the command

    # What the model was asked for, through Triton's generate endpoint: the pinned length, greedy.
    calls = [json.loads(line) for line in standin_server.record_path.read_text().splitlines()[before:]]
    assert len(calls) == NUM_REQUESTS + WARMUP
    for call in calls:
        assert call == {"max_tokens": OUTPUT_TOKENS, "ignore_eos": True, "temperature": 0.0}  # min_tokens folded

    if os.environ.get("SPECOPS_CAPTURE_AIPERF_EXPORT"):
        shutil.copytree(job.artifact_dir, os.environ["SPECOPS_CAPTURE_AIPERF_EXPORT"], dirs_exist_ok=True)


def _survivors(marker: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]


def test_timeout_raises_and_leaves_no_aiperf_process(standin_server, tokenizer_dir, tmp_path):
    job = _job(standin_server, tokenizer_dir, tmp_path, output_tokens=3000, timeout_s=20)
    marker = str(job.artifact_dir)  # on the main aiperf process's command line
    seen: set[psutil.Process] = set()  # AIPerf's services (workers, record processors, managers)
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for proc in _survivors(marker):
                seen.update(proc.children(recursive=True))
            time.sleep(0.3)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with pytest.raises(BenchToolError, match="exceeded 20s"):
            AIPerf().run(job)
    finally:
        done.set()
        watcher.join()
    assert seen, "AIPerf started no service processes?"
    deadline = time.monotonic() + 10
    while (_survivors(marker) or _alive(seen)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _survivors(marker) == [] and _alive(seen) == []


def _alive(procs: set[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            pass
    return alive


def test_a_server_that_refuses_the_requests_fails_the_run_with_its_errors(standin_server, tokenizer_dir, tmp_path):
    target = BenchTarget(model="no-such-model", endpoints={Api.TRITON_GENERATE: f"http://{standin_server.endpoint.http_url}"})
    job = _job(standin_server, tokenizer_dir, tmp_path, target=target, requests=2, warmup=0)
    with pytest.raises(BenchToolError) as caught:
        AIPerf().run(job)
    message = str(caught.value)
    assert "2x HTTP 404" in message and "no-such-model" in message and str(job.log_path) in message

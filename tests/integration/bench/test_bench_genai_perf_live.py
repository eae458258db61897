"""genai-perf 0.0.16 + perf_analyzer against a real tritonserver (see conftest.py).

Set SPECOPS_CAPTURE_GENAI_PERF_EXPORT=<path> to keep the export of the full run (that is how
tests/unit/bench/fixtures/profile_export_genai_perf.json was captured).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest

from specops.bench import genai_perf
from specops.bench.genai_perf import GenaiPerfRequest
from specops.bench.prompts import load_prompts, write_prompts_jsonl

pytestmark = pytest.mark.integration

NUM_REQUESTS = 6
WARMUP = 1
OUTPUT_TOKENS = 16


@pytest.fixture(scope="module", autouse=True)
def _toolchain_ready():
    problems = genai_perf.preflight()
    if problems:
        pytest.fail("genai-perf cannot run here:\n" + "\n".join(problems))


def _request(server, tokenizer_dir: Path, tmp_path: Path, prompts: list[str], **overrides) -> GenaiPerfRequest:
    fields = dict(
        model=server.model,
        url=server.endpoint.grpc_url,
        input_file=write_prompts_jsonl(prompts, tmp_path / "input.jsonl"),
        tokenizer=tokenizer_dir,
        artifact_dir=tmp_path / "genai-perf",
        request_count=NUM_REQUESTS,
        warmup_request_count=WARMUP,
        output_tokens=OUTPUT_TOKENS,
    )
    return GenaiPerfRequest(**(fields | overrides))


def _survivors(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if marker in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


def test_profile_run_produces_metrics_with_fixed_output_length(standin_server, tokenizer_dir, tmp_path):
    prompts = load_prompts("humaneval", limit=NUM_REQUESTS)
    req = _request(standin_server, tokenizer_dir, tmp_path, prompts)
    lines: list[str] = []
    t0 = time.monotonic()
    artifact_dir = genai_perf.run(req, tmp_path / "genai-perf.log", timeout_s=300, on_line=lines.append)
    elapsed = time.monotonic() - t0
    print(f"genai-perf: {NUM_REQUESTS} requests + {WARMUP} warmup in {elapsed:.1f}s")

    export = genai_perf.find_export(artifact_dir)
    assert export.parent.name == f"{standin_server.model}-triton-vllm-concurrency1"
    metrics = genai_perf.parse_exports(artifact_dir)
    assert metrics["request_count"] == NUM_REQUESTS
    assert metrics["output_token_throughput_tok_s"] > 0 and metrics["request_throughput_req_s"] > 0
    assert 0 < metrics["time_to_first_token_ms_avg"] <= metrics["request_latency_ms_avg"]
    assert metrics["inter_token_latency_ms_avg"] > 0
    assert metrics["request_latency_ms_p50"] <= metrics["request_latency_ms_p99"]
    assert metrics["output_sequence_length_avg"] > 0
    assert any("Running Perf Analyzer" in line for line in lines)

    # What the model was asked for: a fixed output length, greedy, for every request.
    calls = [json.loads(line) for line in standin_server.record_path.read_text().splitlines()]
    assert len(calls) >= NUM_REQUESTS + WARMUP
    for call in calls:
        assert call["max_tokens"] == OUTPUT_TOKENS and call["ignore_eos"] is True
        assert call["temperature"] == 0.0

    if os.environ.get("SPECOPS_CAPTURE_GENAI_PERF_EXPORT"):
        shutil.copyfile(export, os.environ["SPECOPS_CAPTURE_GENAI_PERF_EXPORT"])


def test_interrupt_kills_genai_perf_and_perf_analyzer(standin_server, tokenizer_dir, tmp_path, sigint_interrupts):
    # Long requests: perf_analyzer is surely mid-run when the interrupt arrives.
    prompts = load_prompts("humaneval", limit=2)
    req = _request(standin_server, tokenizer_dir, tmp_path, prompts, output_tokens=5000, warmup_request_count=0)
    marker = str(req.artifact_dir)  # on both genai-perf's and perf_analyzer's command lines
    seen_pa = threading.Event()

    def on_line(line: str) -> None:
        if "Running Perf Analyzer" in line and not seen_pa.is_set():
            seen_pa.set()
            threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()

    with pytest.raises(KeyboardInterrupt):
        genai_perf.run(req, tmp_path / "genai-perf.log", timeout_s=240, on_line=on_line)
    assert seen_pa.is_set()
    deadline = time.monotonic() + 10
    while _survivors(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _survivors(marker) == []


def test_timeout_raises_and_leaves_nothing_behind(standin_server, tokenizer_dir, tmp_path):
    prompts = load_prompts("humaneval", limit=2)
    req = _request(standin_server, tokenizer_dir, tmp_path, prompts, output_tokens=2000)
    with pytest.raises(genai_perf.GenaiPerfTimeout):
        genai_perf.run(req, tmp_path / "genai-perf.log", timeout_s=3)
    deadline = time.monotonic() + 10
    while _survivors(str(req.artifact_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _survivors(str(req.artifact_dir)) == []


def test_tool_run_pairs_every_measured_request_with_its_prompt(standin_server, tokenizer_dir, tmp_path):
    """The GenaiPerf tool end to end: per-request samples agree with genai-perf's own aggregates."""
    from specops.bench.genai_perf_tool import GenaiPerf
    from specops.bench.target import Api, BenchTarget
    from specops.bench.tool import BenchJob

    prompts = load_prompts("humaneval", limit=NUM_REQUESTS + WARMUP)
    target = BenchTarget(model=standin_server.model, endpoints={Api.KSERVE_VLLM: standin_server.endpoint.grpc_url})
    job = BenchJob(target=target, api=Api.KSERVE_VLLM, tokenizer=tokenizer_dir, prompts=prompts,
                   requests=NUM_REQUESTS, warmup=WARMUP, output_tokens=OUTPUT_TOKENS, concurrency=1,
                   artifact_dir=tmp_path / "round-0" / "genai-perf", log_path=tmp_path / "bench.log", timeout_s=300,
                   round=2)
    run = GenaiPerf().run(job)
    samples, metrics = run.samples, run.metrics
    assert len(samples) == metrics.request_count == NUM_REQUESTS  # warm-up requests are not samples
    assert all(0 <= s.prompt < len(prompts) and s.round == 2 for s in samples)
    print("prompts sent:", [s.prompt for s in samples])  # [0..5] here: each variant gets the same ones
    mean_tokens = sum(s.output_tokens for s in samples) / len(samples)
    assert mean_tokens == pytest.approx(metrics.output_sequence_length_avg)
    mean_latency_ms = 1000 * sum(s.latency_s for s in samples) / len(samples)
    assert mean_latency_ms == pytest.approx(metrics.request_latency_ms_avg, rel=1e-3)
    assert all(0 < s.ttft_s <= s.latency_s for s in samples)

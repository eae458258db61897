"""AIPerf 0.13.0 interleaving two real tritonservers' requests in one run (InterleavedJob).

Two servers of the product's Python-backend model with the STAND-IN engine of conftest.py, one sleeping 25
times longer per token than the other, so which server answered a request shows in its latency as well as
in the model name the adapter reads; each engine also records the calls it got. Set
SPECOPS_CAPTURE_AIPERF_EXPORT=<dir> to keep the exports (tests/unit/bench/fixtures/aiperf-interleaved/).
"""
from __future__ import annotations

import json
import os
import shutil
from contextlib import ExitStack
from pathlib import Path

import pytest

from specops.backends.triton_server import TritonServer
from specops.bench.aiperf_tool import AIPerf
from specops.bench.prompts import load_prompts
from specops.bench.target import Api, BenchTarget
from specops.bench.tool import BenchJob, InterleavedJob
from specops.triton.model_config import python_generate_config
from specops.triton.repository import write_python_model
from tests.integration.bench.conftest import ENGINE_FILE

pytestmark = pytest.mark.integration

REQUESTS, WARMUP, OUTPUT_TOKENS = 5, 1, 12
DELAYS = {"fast": 0.002, "slow": 0.05}  # seconds per token of each stand-in engine


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory) -> dict[str, tuple[str, Path]]:
    """model name -> (its server's HTTP address, the file its engine records each call in)."""
    root = tmp_path_factory.mktemp("interleaved-triton")
    out = {}
    with ExitStack() as stack:
        for name, delay in DELAYS.items():
            record = root / name / "engine-calls.jsonl"
            config = python_generate_config(name, model_dir=root / name, method="none",
                                            options={"delay_s": delay, "record_path": str(record)},
                                            engine="bench_standin_engine:RecordingEchoEngine")
            write_python_model(root / name / "repo", config, extra_files=[ENGINE_FILE])
            server = stack.enter_context(TritonServer(root / name / "repo", root / name / "tritonserver.log"))
            out[name] = (f"http://{server.wait_ready(120).http_url}", record)
        yield out


def _jobs(servers, tokenizer_dir, tmp_path, order: list[str]) -> InterleavedJob:
    prompts = load_prompts("humaneval", limit=REQUESTS + WARMUP)
    jobs = [BenchJob(target=BenchTarget(model=name, endpoints={Api.TRITON_GENERATE: servers[name][0]}),
                     api=Api.TRITON_GENERATE, tokenizer=tokenizer_dir, prompts=prompts, requests=REQUESTS,
                     warmup=WARMUP, output_tokens=OUTPUT_TOKENS, concurrency=1,
                     artifact_dir=tmp_path / name / "aiperf", log_path=tmp_path / f"{name}.log", timeout_s=300, round=2)
            for name in order]
    return InterleavedJob(tuple(jobs), artifact_dir=tmp_path / "interleaved" / "aiperf",
                          log_path=tmp_path / "interleaved.log", timeout_s=300)


def _calls(record: Path) -> int:
    return len(record.read_text().splitlines()) if record.exists() else 0


@pytest.mark.parametrize("order", [["fast", "slow"], ["slow", "fast"]])
def test_each_prompt_goes_once_to_each_server_and_each_answer_is_credited_to_its_server(
        two_servers, tokenizer_dir, tmp_path, order):
    job = _jobs(two_servers, tokenizer_dir, tmp_path, order)
    before = {name: _calls(record) for name, (_, record) in two_servers.items()}
    runs = dict(zip(order, AIPerf().run_interleaved(job)))

    for name, (_, record) in two_servers.items():  # each engine's own count: warm-up and measured, nothing else
        assert _calls(record) - before[name] == REQUESTS + WARMUP
    expected_prompts = list(range(WARMUP, WARMUP + REQUESTS))  # warm-up takes prompt 0 on each server
    for run in runs.values():
        assert sorted(s.prompt for s in run.samples) == expected_prompts and {s.round for s in run.samples} == {2}
        assert run.metrics.request_count == REQUESTS
        assert run.metrics.request_latency_ms_avg == pytest.approx(
            1000 * sum(s.latency_s for s in run.samples) / REQUESTS)
    # The slow engine sleeps 50 ms per token, so none of its answers can take less than 12 x 50 ms, however
    # idle the host. Both variants answered 5 requests, so a fast answer credited to "slow" (one swap) would
    # show here. (A fast answer's own latency is no bound: a busy host can delay it past 100 ms.)
    slowest_possible = OUTPUT_TOKENS * DELAYS["slow"]
    assert all(s.latency_s >= slowest_possible for s in runs["slow"].samples), runs["slow"].samples
    assert sorted(s.latency_s for s in runs["fast"].samples)[REQUESTS // 2] < slowest_possible / 2  # median
    # One tool run: one AIPerf command with both servers' URLs, in the job's order.
    command = job.log_path.read_text().splitlines()[0]
    urls = [part.strip("'") for part in command.split("--url ")[1:]]
    assert [u.split()[0].rsplit("/", 1)[-1] for u in urls] == order
    if os.environ.get("SPECOPS_CAPTURE_AIPERF_EXPORT") and order[0] == "fast":
        target = Path(os.environ["SPECOPS_CAPTURE_AIPERF_EXPORT"])
        target.mkdir(parents=True, exist_ok=True)
        for name in ("inputs.json", "profile_export.jsonl", "profile_export_raw.jsonl", "profile_export_aiperf.json"):
            shutil.copy(job.artifact_dir / name, target / name)
        (target / "prompts.json").write_text(json.dumps(job.load.prompts))

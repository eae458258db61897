"""RunResult instances shaped like real runs (ok, invalid, failed), for tests of what reads them,
and writers in other processes that append them to a store at the same moment."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from specops.acceptance.model import Acceptance
from specops.results.metrics import BenchMetrics, RequestSample
from specops.results.model import (
    BenchmarkRecord,
    Cost,
    Divergence,
    Failure,
    HostRecord,
    Lossless,
    ModelRecord,
    Phases,
    RunResult,
    ServedRecord,
    SoftwareRecord,
    Status,
    VariantRecord,
    Verdict,
)
from specops.results.paired import Speedup

T0 = 1_767_268_800.0  # 2026-01-01 12:00:00 UTC


def metrics(tok_s: float, ttft_ms: float = 120.0, itl_ms: float = 60.0, requests: int = 8) -> BenchMetrics:
    latency = ttft_ms + 127 * itl_ms
    return BenchMetrics(
        output_token_throughput_tok_s=tok_s,
        request_throughput_req_s=tok_s / 128,
        request_latency_ms_avg=latency,
        request_latency_ms_p50=latency,
        request_latency_ms_p99=latency * 1.2,
        time_to_first_token_ms_avg=ttft_ms,
        time_to_first_token_ms_p50=ttft_ms,
        time_to_first_token_ms_p99=ttft_ms * 1.5,
        inter_token_latency_ms_avg=itl_ms,
        inter_token_latency_ms_p50=itl_ms,
        inter_token_latency_ms_p99=itl_ms * 1.4,
        output_sequence_length_avg=128.0,
        input_sequence_length_avg=180.0,
        request_count=requests,
    )


def variant(name: str, method: str, tok_s: float, acceptance: Acceptance | None, cpu_seconds: float) -> VariantRecord:
    samples = [RequestSample(prompt=p, round=r, latency_s=128 / tok_s, output_tokens=128, ttft_s=0.12)
               for r in range(2) for p in range(4)]
    measured = metrics(tok_s, itl_ms=1000 / tok_s)
    return VariantRecord(
        name=name, method=method, model="SmolLM2-135M-Instruct", metrics=measured, rounds=[measured, measured],
        samples=samples, acceptance=acceptance,
        cost=Cost(output_tokens=1024, cpu_seconds=cpu_seconds, gpu_source="no NVIDIA GPU", cpu_source="psutil tree"),
    )


def run_result(
    *,
    uid: str | None = None,
    run_id: str | None = None,
    profile: str = "ngram-local",
    started_at: float = T0,
    status: Status = Status.OK,
    speedup: float | None = 1.36,
    spec_tok_s: float = 21.8,
    base_tok_s: float = 16.0,
    framework: str | None = "specops runtime",
    commit: str | None = "0123456789abcdef",
) -> RunResult:
    """One run; every field a real run fills is filled, with values that can be told apart."""
    uid = uid or secrets.token_hex(16)
    run_id = run_id or time.strftime("%Y%m%d-%H%M%S", time.gmtime(started_at)) + "-" + uid[:4]
    failed = status.ended_early
    verdict = Verdict(status.value.upper()) if failed else {Status.OK: Verdict.VALID, Status.INVALID: Verdict.INVALID}[status]
    variants = [] if failed else [
        variant("speculative", "ngram", spec_tok_s,
                Acceptance("runtime counters", 400, 1600, 1000, num_steps=620, num_emitted_tokens=1024,
                           draft_seconds=0.4, verify_seconds=40.0), cpu_seconds=50.0),
        variant("base", "none", base_tok_s, None, cpu_seconds=64.0),
    ]
    mismatches = 2 if status is Status.INVALID else 0
    return RunResult(
        uid=uid, run_id=run_id, run_dir=f"/work/artifacts/{profile}/{run_id}", profile=profile,
        profile_sha256="ab" * 32, profile_source=f"profiles/{profile}.yaml", overrides=["benchmark.rounds=2"],
        method="ngram", backend="local", started_at=started_at, finished_at=started_at + 300.0,
        status=status, verdict=verdict,
        reasons=["2 of 8 outputs differ from the base's"] if mismatches else [],
        models=[ModelRecord(role="target", source="embedded:smollm2", sha256="cd" * 32, path="/cache/smollm2")],
        host=HostRecord(hostname="bench-1", platform="Linux-6.1-x86_64", python="3.11.2",
                        cpu_model="AMD EPYC 7B13", cores=2, memory_gb=24.0),
        software=SoftwareRecord(specops="0.1.0", git_commit=commit, git_dirty=False,
                                packages={"torch": "2.13.0", "genai-perf": "0.0.16"}),
        served=ServedRecord(backend="local", framework=framework, servers={"tritonserver": "2.51.0"}),
        benchmark=BenchmarkRecord(tool="genai-perf", tool_version="0.0.16", api="kserve", prompts="humaneval",
                                  num_requests=8, warmup_requests=2, output_tokens=128, concurrency=1,
                                  rounds=2, interleave=True),
        variants=variants,
        speedup=None if failed or speedup is None else Speedup(
            point=speedup, low=speedup - 0.05, high=speedup + 0.05, prompts=4, rounds=2,
            resampled="rounds (t-interval over 2 rounds; each variant's round one block)",
            throughput_ratio=spec_tok_s / base_tok_s),
        lossless=None if failed else Lossless(
            compared=8, mismatches=mismatches,
            first=Divergence(prompt_index=3, position=17, base="def f(x):", speculative="def f(y):") if mismatches
            else None),
        phases=Phases(wall_s=300.0, phase_s={"serve": 40.0, "benchmark": 200.0}),
        cached_steps={"download": True, "render": False},
        failure=Failure(step="serve", variant="speculative", error="TimeoutError: server not ready in 120 s",
                        logs=[f"/work/artifacts/{profile}/{run_id}/logs/serve.log"]) if failed else None,
    )


REPO_ROOT = Path(__file__).resolve().parents[1]
_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from specops.results.store import ResultsStore
    from tests.results_factory import T0, run_result
    url, tag, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    while not go.exists():  # start together, so the opens (and their migrations) race
        time.sleep(0.005)
    with ResultsStore.open(url) as store:
        for i in range(20):
            store.append(run_result(uid=f"{tag}{i:02d}".ljust(32, "0"), started_at=T0 + i))
            store.append(run_result(uid=f"shared{i:02d}".ljust(32, "0"), started_at=T0 + i, profile=tag))
""")


def append_from_processes(url: str, tags: list[str], workdir: Path, timeout: float = 180) -> list[tuple[int, str]]:
    """One process per tag opens `url` and appends 20 runs of its own plus 20 whose uids every writer
    shares (their profile is the last writer's tag); (exit code, output) of each."""
    go = workdir / f"go-{secrets.token_hex(4)}"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, url, tag, str(go)], cwd=REPO_ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for tag in tags]
    go.touch()
    try:
        outputs = [writer.communicate(timeout=timeout)[0] for writer in writers]
    finally:
        for writer in writers:
            writer.kill()
    return [(writer.returncode, output) for writer, output in zip(writers, outputs)]


def insert_future_rows(store, profile: str = "ngram-local", started_at: float = T0 + 3600.0) -> tuple[str, str]:
    """Two rows as a newer specops would write them, straight into the table: one with a field this version
    does not know (readable in part), one that retyped a field (unreadable). Their run ids."""
    from specops.results.model import SCHEMA_VERSION
    from specops.results.store import _row, runs

    rows = []
    for run_id, change in (("from-a-newer-specops", {"energy_budget_j": 12.5}),
                           ("retyped-by-a-newer-specops", {"status": "paused"})):
        result = run_result(run_id=run_id, profile=profile, started_at=started_at)
        row = _row(result)
        row["result"] = row["result"] | {"schema_version": SCHEMA_VERSION + 1} | change
        rows.append(row | {"schema_version": SCHEMA_VERSION + 1})
        started_at += 1.0
    with store.engine.begin() as conn:
        conn.execute(runs.insert(), rows)
    return rows[0]["run_id"], rows[1]["run_id"]

"""Benchmark served variants for one round, and what their servers spent doing it.

Two designs pair the variants' measurements (benchmark.pairing; the run records which it used):
- requests: one tool run per round whose requests alternate between the variants, so each prompt is measured on
  every variant back to back (a tool and API that can address several servers, at concurrency 1);
- rounds: one tool run per variant and round, the variants taking turns round by round when both are up.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from specops.acceptance.model import Acceptance
from specops.backends.base import Backend, Server
from specops.bench.sampling import Workload
from specops.bench.tool import BenchJob, BenchTool, InterleavedJob, interleave_blocker
from specops.cost.meter import CostMeter
from specops.host.liveness import Watchdog, Watchdogs
from specops.pipeline.check import Pace
from specops.profile.schema import Benchmark
from specops.results.metrics import BenchMetrics, BenchRun
from specops.results.model import Cost, VariantRecord
from specops.results.paired import Design
from specops.run.variant import Variant

# genai-perf's start-up (Python, tokenizer, perf_analyzer) took up to ~20 s on 2 busy cores; AIPerf's
# service start-up ~30 s. A run with no measured pace (a plan) assumes a slow CPU's 1 s per token.
TOOL_STARTUP_S = 120.0
PACE_SAFETY = 4.0
UNMEASURED_PACE_S = 1.0


# The GPU energy of one window cannot be split between servers whose requests alternate within it.
SHARED_GPU_WINDOW = "not split: the variants' requests alternated within one window"


def choose_design(tool: BenchTool, jobs: list[BenchJob], pairing: str) -> tuple[Design, str | None]:
    """The design these variants are measured in, and why it is not interleaved requests (None: it is)."""
    if len(jobs) < 2:
        return Design.ROUNDS, "one variant is measured at a time"
    if pairing == Design.ROUNDS:
        return Design.ROUNDS, "benchmark.pairing is rounds"
    blocker = interleave_blocker(tool, jobs)
    if blocker is None:
        return Design.REQUESTS, None
    if pairing == Design.REQUESTS:  # validated at load; a server whose API changed would land here
        raise ValueError(f"benchmark.pairing is requests, but {blocker}")
    return Design.ROUNDS, blocker


def tool_timeout(bench: Benchmark, pace: Pace | None, round_: int = 0) -> float:
    """benchmark.timeout_s when the profile sets it; otherwise the work asked for (requests x
    tokens) at PACE_SAFETY times the server's measured seconds per token, plus the tool's
    start-up. Concurrency is left out: on the servers specops drives, more concurrent requests
    never lowered the aggregate rate, so the bound only grows looser with it."""
    if bench.timeout_s is not None:
        return bench.timeout_s
    requests = bench.num_requests + (bench.warmup_requests if round_ == 0 else 0)
    per_token = pace.per_token_s if pace is not None and pace.tokens else UNMEASURED_PACE_S
    return TOOL_STARTUP_S + PACE_SAFETY * requests * bench.output_tokens * per_token


def bench_job(tool: BenchTool, backend: Backend, server: Server | None, variant: Variant, tokenizer: Path | str,
              bench: Benchmark, workload: Workload, run_path: Path, round_: int,
              pace: Pace | None = None) -> BenchJob:
    """The tool's job for one round (server None: for a plan). Warm-up requests only in a
    variant's first round: its server stays up (and warm) between rounds."""
    target = backend.bench_target(server, variant)
    api = tool.pick_api(target.apis, chat=workload.chat)
    if api is None:  # validated at load; a backend whose servers changed APIs would land here
        raise ValueError(f"{tool.name} cannot drive any {workload.request.name} API of "  # type: ignore[union-attr]
                         f"{[a.value for a in target.apis]}")
    where = run_path / "bench" / variant.name / f"round-{round_}"
    return BenchJob(target=target, api=api, tokenizer=tokenizer, prompts=workload.prompts, requests=bench.num_requests,
                    warmup=workload.warmup if round_ == 0 else 0, output_tokens=bench.output_tokens,
                    concurrency=bench.concurrency, artifact_dir=where / tool.name.replace(" ", "-"),
                    log_path=run_path / "logs" / f"bench-{variant.name}-round{round_}.log",
                    timeout_s=tool_timeout(bench, pace, round_), round=round_)


def interleaved_job(tool: BenchTool, jobs: list[BenchJob], run_path: Path, round_: int) -> InterleavedJob:
    """One round of the variants' jobs as a single interleaved run, bounded by the sum of their bounds."""
    where = run_path / "bench" / "interleaved" / f"round-{round_}"
    timeout = TOOL_STARTUP_S + sum(job.timeout_s - TOOL_STARTUP_S for job in jobs)
    return InterleavedJob(jobs=tuple(jobs), artifact_dir=where / tool.name.replace(" ", "-"),
                          log_path=run_path / "logs" / f"bench-interleaved-round{round_}.log", timeout_s=timeout)


@dataclass(frozen=True)
class Measured:
    """One round of one variant: the tool's figures and the server's spending over the same window."""

    run: BenchRun
    cost: Cost  # output tokens of every request in the window (warm-up included) and what they cost


def measure_round(tool: BenchTool, job: BenchJob, server: Server, gpus: str,
                  on_line: Callable[[str], None] | None = None) -> Measured:
    """Run the tool with the server's CPU time (and, on a GPU host, its GPUs' energy) read around it,
    and the server watched: one that dies or stalls stops the tool within seconds (ServerDown)."""
    meter = CostMeter.with_gpus(server.cpu_seconds, _cpu_source(server), gpus)
    with meter.window() as window:
        run = tool.run(job, on_line=on_line, watch=Watchdog(server, f"{tool.name} benchmark"))
    return Measured(run, window.cost(window_tokens(run, job)))


def measure_interleaved(tool: BenchTool, job: InterleavedJob, servers: list[Server],
                        on_line: Callable[[str], None] | None = None) -> list[Measured]:
    """An interleaved run with each server's CPU time read around it (only one server works at a time at
    concurrency 1, so each tree's CPU time is its own variant's), and every server watched."""
    meters = [CostMeter(server.cpu_seconds, _cpu_source(server), None, SHARED_GPU_WINDOW) for server in servers]
    with ExitStack() as stack:
        windows = [stack.enter_context(meter.window()) for meter in meters]
        runs = tool.run_interleaved(job, on_line=on_line, watch=Watchdogs(
            [Watchdog(server, f"{tool.name} interleaved benchmark") for server in servers]))
    return [Measured(run, window.cost(window_tokens(run, job.load))) for run, window in zip(runs, windows)]


def _cpu_source(server: Server) -> str:
    return f"CPU time of the {server.version()[0]} server's process tree or container"


def window_tokens(run: BenchRun, job: BenchJob) -> float:
    """Output tokens a server produced in a benchmark window. Warm-up requests ran inside the same window at the
    pinned length: they count at the measured requests' mean."""
    measured = sum(s.output_tokens for s in run.samples)
    return measured * (job.requests + job.warmup) / job.requests if run.samples else 0.0


def total_cost(costs: list[Cost]) -> Cost | None:
    """Spending summed over rounds; a quantity missing in any round is missing in the total."""
    if not costs:
        return None

    def total(name: str) -> float | None:
        values = [getattr(c, name) for c in costs]
        return None if any(v is None for v in values) else sum(values)

    return Cost(output_tokens=sum(c.output_tokens for c in costs), cpu_seconds=total("cpu_seconds"),
                gpu_energy_j=total("gpu_energy_j"), cpu_source=costs[0].cpu_source, gpu_source=costs[0].gpu_source)


def variant_record(variant: Variant, rounds: list[Measured], acceptance: Acceptance | None) -> VariantRecord:
    """A variant's rounds folded into its record: figures averaged, samples and spending summed."""
    metrics = [m.run.metrics for m in rounds]
    return VariantRecord(name=variant.name, method=variant.method.kind, model=variant.model_name,
                         metrics=BenchMetrics.mean(metrics) if metrics else None, rounds=metrics,
                         samples=[s for m in rounds for s in m.run.samples], acceptance=acceptance,
                         cost=total_cost([m.cost for m in rounds]))

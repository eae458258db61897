"""Benchmark served variants for one round (one variant, or several with their requests interleaved), and read
the backend's acceptance counters."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from prefect import get_run_logger
from prefect.runtime import flow_run

from prefect_adapters.progress_artifacts import ProgressArtifact
from prefect_adapters.step import step
from specops.acceptance.model import Acceptance
from specops.atomic_file import write_text
from specops.backends.base import Backend, Server
from specops.bench.sampling import Workload
from specops.bench.tool import BenchJob, BenchTool
from specops.pipeline.benchmark import Measured, bench_job, interleaved_job, measure_interleaved, measure_round
from specops.pipeline.check import Pace
from specops.profile.loader import LoadedProfile
from specops.profile.schema import Benchmark
from specops.replay.run import ReplayError, predicted_for_run, record_step_cost
from specops.replay.traffic import traffic_lines
from specops.results.model import VariantRecord
from specops.results.predicted import Predicted
from specops.run.progress import Progress, within
from specops.run.rundir import RunDir
from specops.run.variant import Variant

# One progress artifact per variant and flow run, carried across its rounds (each round is a task run), dropped
# after its last round: a flow that runs others in its own process (calibrate, compare) would otherwise keep one per
# run for as long as it lives.
_PROGRESS: dict[tuple[str, str], ProgressArtifact] = {}


@step(timed="benchmark")
def benchmark_round(tool: BenchTool, backend: Backend, server: Server, variant: Variant, tokenizer: Path,
                    bench: Benchmark, workload: Workload, run: RunDir, round_: int,
                    pace: Pace | None = None) -> Measured:
    """One round of the benchmark tool against the variant; its files land in bench/<variant>/round-<n>/."""
    log = get_run_logger()
    job = bench_job(tool, backend, server, variant, tokenizer, bench, workload, run.path, round_, pace)
    log.info("%s round %d/%d: %s over %s, %d requests x %d tokens, concurrency %d, bound %.0fs", variant.name,
             round_ + 1, bench.rounds, tool.name, job.api.value, job.requests, job.output_tokens, job.concurrency,
             job.timeout_s)
    share, on_line = _round_progress(tool, variant.name, round_, bench.rounds, tool.name)
    measured = measure_round(tool, job, server, backend.gpus(), on_line=on_line)
    share(1.0, f"round {round_ + 1}/{bench.rounds} done")
    _round_done(variant.name, round_, bench.rounds)
    m, cost = measured.run.metrics, measured.cost
    log.info("%s round %d: %.2f output tokens/s, %s CPU s per 1k tokens", variant.name, round_ + 1,
             m.output_token_throughput_tok_s, f"{cost.cpu_s_per_1k_tokens:.1f}" if cost.cpu_s_per_1k_tokens else "no")
    return measured


@step(timed="benchmark", label="interleaved")
def benchmark_interleaved_round(tool: BenchTool, servers: list[Server], jobs: list[BenchJob], run: RunDir,
                                round_: int, rounds: int) -> list[Measured]:
    """One round in which the variants' requests alternate, in `jobs` order, in one run of the tool; its files
    land in bench/interleaved/round-<n>/. One Measured per job."""
    log = get_run_logger()
    job = interleaved_job(tool, jobs, run.path, round_)
    names = " <-> ".join(j.target.model for j in jobs)
    log.info("round %d/%d, requests interleaved %s: %s over %s, %d requests x %d tokens per variant, bound %.0fs",
             round_ + 1, rounds, names, tool.name, job.load.api.value, job.load.requests, job.load.output_tokens,
             job.timeout_s)
    bar = " <-> ".join(sorted(j.target.model for j in jobs))  # one bar, whichever goes first
    share, on_line = _round_progress(tool, bar, round_, rounds, f"{tool.name}, interleaved")
    measured = measure_interleaved(tool, job, servers, on_line=on_line)
    share(1.0, f"round {round_ + 1}/{rounds} done")
    _round_done(bar, round_, rounds)
    for j, m in zip(jobs, measured):
        log.info("%s round %d: %.2f output tokens/s over its own requests", j.target.model, round_ + 1,
                 m.run.metrics.output_token_throughput_tok_s)
    return measured


def _round_progress(tool: BenchTool, bar: str, round_: int, rounds: int,
                    what: str) -> tuple[Progress, Callable[[str], None]]:
    """The round's share of its bar, and the tool-output callback that moves it on by the phases the tool's
    output announces."""
    share = within(_variant_progress(bar).report, round_ / rounds, (round_ + 1) / rounds)
    return share, tool.line_progress(share, f"round {round_ + 1}/{rounds}, {what}")


def _round_done(bar: str, round_: int, rounds: int) -> None:
    if round_ + 1 == rounds:
        _PROGRESS.pop((str(flow_run.id), bar), None)


def _variant_progress(name: str) -> ProgressArtifact:
    key = (str(flow_run.id), name)
    if key not in _PROGRESS:
        _PROGRESS[key] = ProgressArtifact(f"benchmark of {name}")
    return _PROGRESS[key]


@step
def record_answers(workload: Workload, measured: list[Measured], variant: Variant, run: RunDir) -> None:
    """The variant's answers to the measured prompts (first round), where the tool kept them, as a traffic log in
    the run (answers/<variant>.jsonl): `specops replay --traffic` replays it."""
    answers = measured[0].run.answers if measured else {}
    if answers:
        lines = traffic_lines(workload, answers)
        write_text(run.path / "answers" / f"{variant.name}.jsonl",
                   "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
        get_run_logger().info("%s: %d answers kept in answers/%s.jsonl", variant.name, len(lines), variant.name)


@step
def read_acceptance(backend: Backend, server: Server, variant: Variant, settle: bool = False) -> Acceptance | None:
    """Read the cumulative speculation counters from the backend's own source."""
    return backend.acceptance(server, variant, settle)


@step(timed="predict", label="speculative")
def keep_step_cost(loaded: LoadedProfile, backend: Backend, variants: list[VariantRecord], run: RunDir,
                   predicted: Predicted | None) -> None:
    """The run's requests into this host's step-cost store (replay.step_cost), which later replays and runs predict
    their speedups with; only where the backend runs the replay's drafters here."""
    by_name = {v.name: v for v in variants}
    spec, base = by_name.get("speculative"), by_name.get("base")
    if not backend.replays_here() or spec is None or base is None:
        return
    try:
        added = record_step_cost(loaded, spec.samples, base.samples, str(run.path), predicted)
    except (OSError, ValueError) as exc:  # a reading for later runs, never a step this run needs
        get_run_logger().warning("step cost not kept: %s", exc)
        return
    get_run_logger().info("step cost: %d requests kept for later predictions", added)


@step(timed="predict", label="speculative")
def predict_acceptance(loaded: LoadedProfile, backend: Backend, run: RunDir, workload: Workload) -> Predicted | None:
    """`specops replay` of the run's own setting over its benchmark's prompts (the engine's drafter over the
    target's greedy outputs), where the backend runs that drafter here: the report shows it beside what the engine
    counted. The prediction is a reading, not a step the run needs: a replay that fails is logged, never fatal."""
    if not backend.replays_here():
        return None
    log = get_run_logger()
    try:
        return predicted_for_run(loaded, workload, say=log.info)
    except (ReplayError, OSError, ValueError) as exc:
        log.warning("no replay prediction for this run: %s", exc)
        return None

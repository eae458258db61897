"""Benchmark one served variant with genai-perf and read its acceptance counters around it."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from specops.backends.base import BenchTarget, Server, Variant, load_backend
from specops.bench import genai_perf
from specops.bench.prompts import load_prompts, write_genai_perf_input
from specops.profile.schema import Profile
from specops.rundir import RunDir
from specops.sources.base import ModelArtifact


def genai_perf_request(profile: Profile, where: BenchTarget, tokenizer: Path | str, input_file: Path,
                       artifact_dir: Path) -> genai_perf.GenaiPerfRequest:
    """The genai-perf run for one served variant (pure: used by runs and by plans)."""
    bench = profile.benchmark
    return genai_perf.GenaiPerfRequest(
        model=where.model,
        url=where.url,
        input_file=input_file,
        tokenizer=tokenizer,
        artifact_dir=artifact_dir,
        endpoint_type=where.endpoint_type,
        backend=where.backend,
        streaming=where.streaming,
        extra_inputs=where.extra_inputs,
        concurrency=bench.concurrency,
        request_count=bench.num_requests,
        warmup_request_count=bench.warmup_requests,
        output_tokens=bench.output_tokens,
    )


def benchmark_request(profile: Profile, server: Server, variant: Variant, target: ModelArtifact,
                      run: RunDir) -> genai_perf.GenaiPerfRequest:
    bench = profile.benchmark
    backend = load_backend(profile)
    prompts = load_prompts(bench.prompts, limit=bench.num_requests + bench.warmup_requests, offset=bench.prompt_offset)
    input_file = write_genai_perf_input(prompts, run.sub("inputs") / "genai_perf_input.jsonl")
    return genai_perf_request(profile, backend.bench_target(server, variant), backend.tokenizer_dir(target),
                              input_file, run.sub("genai-perf", variant.name))


def run_benchmark(profile: Profile, server: Server, variant: Variant, target: ModelArtifact, run: RunDir,
                  on_line: Callable[[str], None] | None = None) -> dict[str, float]:
    req = benchmark_request(profile, server, variant, target, run)
    log_path = run.logs() / f"genai-perf-{variant.name}.log"
    artifact_dir = genai_perf.run(req, log_path, profile.benchmark.timeout_s, on_line=on_line)
    return genai_perf.parse_exports(Path(artifact_dir))

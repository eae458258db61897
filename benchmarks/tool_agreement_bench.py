"""Do AIPerf and genai-perf measure one server alike? Both against the same base server, in turns.

    .venv/bin/python benchmarks/tool_agreement_bench.py [--rounds 3] [--requests 16] [--output-tokens 64]

Serves the profile's base variant (ngram-local: the embedded SmolLM2 on tritonserver) once, then
runs genai-perf (KServe gRPC, perf_analyzer) and AIPerf (Triton HTTP generate_stream) in turns,
G A G A ..., on the same prompts, the same pinned output length and concurrency. Each tool's first
run carries the profile's warm-up requests. Prints per run: output tokens/s as the tool reports it,
the tokens the server says it emitted, the server's and the tool's CPU seconds; then each
adjacent pair's ratio and the ratio of the means (AIPerf / genai-perf). Nothing is asserted.
"""
from __future__ import annotations

import argparse
import dataclasses
import resource
import statistics
import tempfile
import time
from pathlib import Path


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="ngram-local")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each tool")
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()

    from specops.bench.tool import bench_tool
    from specops.pipeline.backend import backend_for, preflight
    from specops.pipeline.benchmark import bench_job
    from specops.pipeline.render import render_repository, stage_repository
    from specops.profile.loader import load_profile
    from specops.profile.workload import workload_for
    from specops.run.variant import BASE, variants_of
    from specops.settings import cache_root
    from specops.sources.fetch import fetch
    from specops.triton.client import read_metrics

    overrides = [f"benchmark.num_requests={args.requests}", f"benchmark.output_tokens={args.output_tokens}",
                 f"benchmark.concurrency={args.concurrency}"]
    profile = load_profile(args.profile, overrides).profile
    backend = backend_for(profile)
    tools = {"genai-perf": bench_tool("genai-perf"), "aiperf": bench_tool("aiperf")}
    problems = [p for tool in tools.values() for p in preflight(backend, tool)]
    if problems:
        raise SystemExit("cannot run here:\n" + "\n".join(problems))
    target = fetch(profile.target.source, cache_root())
    base = next(v for v in variants_of(profile.method, profile.comparison.baseline) if v.name == BASE)
    repo = render_repository(backend, base, target, None, cache_root())
    prompts = workload_for(profile, cache_root())
    work = Path(tempfile.mkdtemp(prefix="tool-agreement-"))
    server = backend.launch(base, stage_repository(repo.value, work / "repository"), work / "server.log")
    rows = []
    try:
        emitted = lambda: read_metrics(server.endpoint, base.model_name).get(  # noqa: E731
            "spec_decode_num_emitted_tokens", float("nan"))
        for round_ in range(args.rounds):
            for name, tool in tools.items():
                job = bench_job(tool, backend, server, base, target.path, profile.benchmark, prompts, work, round_)
                job = dataclasses.replace(job, artifact_dir=work / name / f"round-{round_}",
                                          log_path=work / "logs" / f"{name}-{round_}.log")
                rows.append(r := {"tool": name, "round": round_} | measure(tool, job, server, emitted))
                print(f"{name:10} round {round_}: {r['tok_s']:.3f} tok/s, server emitted {r['server_tokens']:.0f}, "
                      f"server CPU {r['server_cpu_s']:.1f}s, tool CPU {r['tool_cpu_s']:.1f}s, wall {r['wall_s']:.0f}s",
                      flush=True)
    finally:
        server.stop(profile.serving.stop_timeout_s)
    print_table(rows, args.rounds, work)


def measure(tool, job, server, emitted) -> dict:
    """One run of `tool`: what it reports, and what the server emitted and both spent meanwhile."""
    tokens0, server0, client0, t0 = emitted(), server.cpu_seconds(), children_cpu_s(), time.monotonic()
    run = tool.run(job)
    return {"api": job.api.value, "tok_s": run.metrics.output_token_throughput_tok_s,
            "server_tokens": emitted() - tokens0, "server_cpu_s": server.cpu_seconds() - server0,
            "tool_cpu_s": children_cpu_s() - client0, "wall_s": time.monotonic() - t0,
            "itl_ms": run.metrics.inter_token_latency_ms_avg, "ttft_ms": run.metrics.time_to_first_token_ms_avg}


def print_table(rows: list[dict], rounds: int, work: Path) -> None:
    print()
    print("| round | genai-perf tok/s | AIPerf tok/s | ratio | ITL ms (G / A) | tool CPU s (G / A) |")
    print("|---|---|---|---|---|---|")
    by = {(r["tool"], r["round"]): r for r in rows}
    for round_ in range(rounds):
        g, a = by["genai-perf", round_], by["aiperf", round_]
        print(f"| {round_} | {g['tok_s']:.3f} | {a['tok_s']:.3f} | {a['tok_s'] / g['tok_s']:.3f} | {g['itl_ms']:.1f} / "
              f"{a['itl_ms']:.1f} | {g['tool_cpu_s']:.1f} / {a['tool_cpu_s']:.1f} |")
    g_mean = statistics.mean(r["tok_s"] for r in rows if r["tool"] == "genai-perf")
    a_mean = statistics.mean(r["tok_s"] for r in rows if r["tool"] == "aiperf")
    print(f"\nmean tokens/s: genai-perf {g_mean:.3f}, AIPerf {a_mean:.3f}; AIPerf / genai-perf = {a_mean / g_mean:.3f} "
          f"({abs(a_mean / g_mean - 1) * 100:.1f}% apart); runs in {work}")


if __name__ == "__main__":
    main()

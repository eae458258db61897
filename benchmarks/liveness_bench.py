"""How late does a loaded server answer its readiness probe? The basis of specops.host.liveness.STALL_S.

    .venv/bin/python benchmarks/liveness_bench.py [--requests 16] [--output-tokens 64] [--concurrency 4]

Serves the profile's speculative variant (ngram-local: the embedded SmolLM2 on tritonserver) and
runs genai-perf against it at the given concurrency, so that the server and the client take every
core of this host. Meanwhile the watchdog's own probe (`server.answers`) runs every 0.2 s and each
answer's latency is recorded. Prints the probe latency's median, p99 and maximum under load and
idle, and the ratio of STALL_S to the worst; also the per-token pace the smoke request measured
and the benchmark time bound derived from it against the tool's actual wall time. Nothing is
asserted.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def probe_latencies(server, stop: threading.Event, every_s: float = 0.2) -> list[float]:
    from specops.host.liveness import PROBE_TIMEOUT_S

    out = []
    while not stop.is_set():
        t0 = time.monotonic()
        ok = server.answers(PROBE_TIMEOUT_S)
        out.append(time.monotonic() - t0 if ok else float("inf"))
        stop.wait(every_s)
    return out


@contextmanager
def probing(server) -> Iterator[list[float]]:
    """The watchdog probe's latencies while the block runs."""
    stop, latencies = threading.Event(), []
    prober = threading.Thread(target=lambda: latencies.extend(probe_latencies(server, stop)))
    prober.start()
    try:
        yield latencies
    finally:
        stop.set()
        prober.join()


def summary(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return (f"{name}: {len(values)} probes, median {statistics.median(values) * 1000:.0f} ms, "
            f"p99 {p99 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="ngram-local")
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()

    from specops.bench.tool import bench_tool
    from specops.pipeline.backend import backend_for
    from specops.pipeline.benchmark import bench_job
    from specops.pipeline.check import Pace, smoke
    from specops.pipeline.render import render_repository, stage_repository
    from specops.profile.loader import load_profile
    from specops.profile.workload import workload_for
    from specops.run.variant import SPECULATIVE, variants_of
    from specops.settings import cache_root
    from specops.sources.fetch import fetch

    overrides = [f"benchmark.num_requests={args.requests}", f"benchmark.output_tokens={args.output_tokens}",
                 f"benchmark.concurrency={args.concurrency}", "benchmark.warmup_requests=0"]
    profile = load_profile(args.profile, overrides).profile
    backend, tool = backend_for(profile), bench_tool(profile.benchmark.tool)
    target = fetch(profile.target.source, cache_root())
    variant = next(v for v in variants_of(profile.method, profile.comparison.baseline) if v.name == SPECULATIVE)
    repo = render_repository(backend, variant, target, None, cache_root())
    work = Path(tempfile.mkdtemp(prefix="liveness-"))
    server = backend.launch(variant, stage_repository(repo.value, work / "repository"), work / "server.log")
    try:
        pace = Pace()
        smoke(backend, server, variant, pace)
        with probing(server) as idle:
            time.sleep(5)
        job = bench_job(tool, backend, server, variant, target.path, profile.benchmark,
                        workload_for(profile, cache_root()), work, 0, pace)
        with probing(server) as loaded:
            t0 = time.monotonic()
            try:
                tool.run(job)
            finally:
                wall = time.monotonic() - t0
    finally:
        server.stop(profile.serving.stop_timeout_s)
    report(idle, loaded, pace, job, tool.name, wall)


def report(idle: list[float], loaded: list[float], pace, job, tool: str, wall: float) -> None:
    from specops.host.liveness import STALL_S

    print(summary("idle  ", idle))
    print(summary("loaded", loaded))
    failed = sum(1 for v in loaded if v == float("inf"))
    print(f"probes that got no answer under load: {failed}; STALL_S {STALL_S:.0f}s = "
          f"{STALL_S / max(v for v in loaded if v != float('inf')):.0f}x the worst answered probe")
    print(f"smoke pace {pace.per_token_s * 1000:.0f} ms per requested token; derived bound {job.timeout_s:.0f}s "
          f"for {job.requests} x {job.output_tokens} tokens at concurrency {job.concurrency}; "
          f"{tool} took {wall:.0f}s ({job.timeout_s / wall:.1f}x headroom)")


if __name__ == "__main__":
    main()

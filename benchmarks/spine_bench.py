"""ngram vs base on HumanEval at concurrency 1, measured by genai-perf, plus orchestration overhead.

    .venv/bin/python benchmarks/spine_bench.py [--set benchmark.num_requests=16 ...]

Runs the real `specdec` flow (tritonserver + genai-perf + SmolLM2-135M) with a longer benchmark
than the demo (16 requests x 128 tokens); --runs N repeats it (later runs take download and
render from cache). Ratios come from one run each; nothing here asserts a target.
"""
from __future__ import annotations

import argparse
import time

DEFAULTS = ["benchmark.num_requests=16", "benchmark.output_tokens=128", "comparison.lossless_prompts=8"]


def one_run(profile: str, overrides: list[str]) -> None:
    from flows.specdec import run_specdec

    start = time.monotonic()
    result = run_specdec(profile, overrides)
    total = time.monotonic() - start
    measured = sum(result.phases.phase_s.values())
    spec, base = result.variant("speculative"), result.variant("base")
    acc = spec.acceptance
    print(f"\n=== {profile} ({result.run_dir})")
    print(f"status                      {result.verdict.value}")
    print(f"base tokens/s               {base.metrics.output_token_throughput_tok_s:.2f}")
    print(f"ngram tokens/s              {spec.metrics.output_token_throughput_tok_s:.2f}")
    print(f"speedup (ngram/base)        {result.speedup.text()}")
    print(f"ITL p50 base / ngram (ms)   {base.metrics.inter_token_latency_ms_p50:.1f} / "
          f"{spec.metrics.inter_token_latency_ms_p50:.1f}")
    print(f"acceptance rate             {acc.acceptance_rate:.3f}")
    print(f"mean accepted per step      {acc.mean_accepted_per_step:.3f}")
    print(f"CPU s per 1k tokens         {spec.cost.cpu_s_per_1k_tokens:.1f} spec / "
          f"{base.cost.cpu_s_per_1k_tokens:.1f} base")
    print(f"run wall                    {total:.1f}s")
    print(f"serve+check+benchmark       {measured:.1f}s")
    print(f"orchestration overhead      {total - measured:.1f}s ({(total - measured) / total:.1%} of wall)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="ngram-local")
    parser.add_argument("--set", dest="overrides", action="append", default=None)
    parser.add_argument("--runs", type=int, default=1, help="repeat to see run-to-run spread (later runs are cached)")
    args = parser.parse_args()
    from prefect_adapters.ephemeral import prefect_defaults

    prefect_defaults()
    for _ in range(args.runs):
        one_run(args.profile, args.overrides or DEFAULTS)


if __name__ == "__main__":
    main()

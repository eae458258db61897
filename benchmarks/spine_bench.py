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
    from specops.results.figures import FIGURES

    start = time.monotonic()
    result = run_specdec(profile, overrides)
    total = time.monotonic() - start
    measured = sum(result.phases.phase_s.values())
    print(f"\n=== {profile} ({result.run_dir})")
    print(f"{'status':<28}{result.verdict.value}")
    print(f"{'speedup (speculative/base)':<28}{result.speedup.text()}")
    for key in ("tokens_per_s", "itl_p50", "acceptance", "accepted_per_step", "cpu_s_per_1k"):
        fig = FIGURES[key]
        values = {v: fig.of(result, v) for v in ("speculative", "base")}
        print(f"{fig.label:<28}" + " / ".join(f"{fig.text(x)} {v}" for v, x in values.items() if x is not None))
    print(f"{'run wall':<28}{total:.1f}s")
    print(f"{'serve+check+benchmark':<28}{measured:.1f}s")
    print(f"{'orchestration overhead':<28}{total - measured:.1f}s ({(total - measured) / total:.1%} of wall)")


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

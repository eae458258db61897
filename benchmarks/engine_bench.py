"""The project's own runtime against real vLLM (its CPU build) on the same target: base and n-gram at the best K.

    .venv/bin/python benchmarks/engine_bench.py [--k 1,2,3,4] [--set benchmark.num_requests=16 ...]

For each engine (ngram-local: the embedded runtime on tritonserver; ngram-vllm-serve-cpu: vLLM's OpenAI
server on the vLLM CPU engine) the `sweep` flow measures the base and every K at concurrency 1 on the same
HumanEval prompts (16 requests x 128 tokens by default), one server per K. Printed: each engine's base and
best-K tokens/s with the paired speedup and its 95% interval, acceptance per step, and vLLM against the
runtime, base to base and best to best, paired prompt by prompt with intervals. The best K is picked from the
same measurements it is reported with (a winner's bias at small K spreads). Nothing here asserts a target.
"""
from __future__ import annotations

import argparse

# profile -> (label, overrides of its own). vLLM runs compiled here (the CPU profiles run eager for start-up's
# sake; compiled decodes ~25% faster, data/vllm_cpu.yaml), as it runs by default wherever it is deployed.
ENGINES = {"ngram-local": ("specops runtime (tritonserver, Python backend)", []),
           "ngram-vllm-serve-cpu": ("vLLM 0.32 CPU (its OpenAI server, compiled)",
                                    ["backend.engine_args.enforce_eager=false"])}
DEFAULTS = ["benchmark.num_requests=16", "benchmark.output_tokens=128", "benchmark.warmup_requests=1",
            "comparison.lossless_prompts=4"]


def cell_result(outcome, k: int):
    """The RunResult of the sweep cell (k, concurrency 1): speculative and base variants with their samples. From
    the results database: a cell an earlier sweep measured is reused, and lives under that sweep's directory."""
    from specops.results.store import ResultsStore

    cell = next(c for c in outcome.cells if c.k == k and c.concurrency == 1)
    with ResultsStore.open() as store:
        return store.get(cell.run_uid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", default="1,2,3,4", help="draft lengths to sweep (comma-separated)")
    parser.add_argument("--set", dest="overrides", action="append", default=None)
    args = parser.parse_args()
    from cli.main import prefect_defaults

    prefect_defaults()
    from flows.sweep import sweep
    from specops.results.speedup import paired_speedup

    ks = [int(k) for k in args.k.split(",")]
    best = {}
    for profile, (label, own) in ENGINES.items():
        outcome = sweep(profile, ks, [1], [*(args.overrides or DEFAULTS), *own], serve_schedule=False)
        print(f"\n=== {profile}: {label} ({outcome.run_dir})\n{outcome.table}")
        k = outcome.best.get(1) or max(ks, key=lambda x: next(c.speedup or 0 for c in outcome.cells if c.k == x))
        best[profile] = (k, cell_result(outcome, k))
    print("\n=== engines on SmolLM2-135M, concurrency 1, paired by prompt (95% intervals)")
    print(f"{'engine':45} {'base tok/s':>10} {'best K':>6} {'n-gram tok/s':>12} {'accepted/step':>13}  speedup")
    for profile, (k, result) in best.items():
        spec, base = result.variant("speculative"), result.variant("base")
        acc = spec.acceptance.mean_accepted_per_step if spec.acceptance and spec.acceptance.available else None
        print(f"{ENGINES[profile][0]:45} {base.metrics.output_token_throughput_tok_s:>10.2f} {k:>6} "
              f"{spec.metrics.output_token_throughput_tok_s:>12.2f} {acc if acc is None else round(acc, 2)!s:>13}"
              f"  {result.speedup.text()}")
    (_, runtime), (_, vllm) = best["ngram-local"], best["ngram-vllm-serve-cpu"]
    for name in ("base", "speculative"):
        ratio = paired_speedup(vllm.variant(name).samples, runtime.variant(name).samples)
        what = "base" if name == "base" else "n-gram at each engine's best K"
        print(f"vLLM CPU / runtime, {what}: {ratio.text() if ratio else 'no paired prompts'}")


if __name__ == "__main__":
    main()

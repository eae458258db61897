"""specops' own runtime against real vLLM (its CPU build) on the same target, with the same n-gram settings.

    .venv/bin/python benchmarks/engine_bench.py [--set benchmark.num_requests=16 ...]

Each engine runs its n-gram profile (ngram-local: the embedded runtime on tritonserver; ngram-vllm-serve-cpu:
vLLM's OpenAI server on the vLLM CPU engine) with identical speculation settings (SETTINGS: K, the n-gram
window) on the same HumanEval prompts, one engine right after the other on this host, each run's requests
interleaved between its n-gram and base servers by AIPerf, so each engine's speedup has a 95% interval over the
prompts. Printed: the host's CPU model (engine speed on a CPU is memory bandwidth: a number from another CPU is
another number), tok/s and server CPU-seconds per 1k output tokens of each variant, accepted tokens per step, the
paired speedup, and vLLM against the runtime prompt by prompt. Nothing here asserts a target.
"""
from __future__ import annotations

import argparse

import provenance

# The same speculation on both engines: without prompt_lookup_min, vLLM would match from prompt_lookup_max tokens
# only (vllm/config/speculative.py SpeculativeConfig.__post_init__, n-gram branch), the runtime from 2.
SETTINGS = ["method.num_speculative_tokens=4", "method.prompt_lookup_min=2", "method.prompt_lookup_max=3"]
# profile -> (label, overrides of its own). vLLM runs compiled here (the CPU profiles run eager for start-up's
# sake; compiled decodes ~25% faster, data/vllm_cpu.yaml), as it runs by default wherever it is deployed.
ENGINES = {"ngram-local": ("specops runtime (tritonserver, Python backend)", []),
           "ngram-vllm-serve-cpu": ("vLLM 0.32 CPU (its OpenAI server, compiled)",
                                    ["backend.engine_args.enforce_eager=false"])}
DEFAULTS = ["benchmark.num_requests=16", "benchmark.output_tokens=128", "benchmark.warmup_requests=1",
            "comparison.lossless_prompts=4"]
# Both runs pair their variants request by request; that needs AIPerf and both servers up at once.
PAIRED = ["benchmark.tool=aiperf", "benchmark.interleave=true", "benchmark.pairing=requests"]


def rows(label: str, result) -> list[str]:
    """One table row per variant of an engine's run."""
    from specops.results.figures import FIGURES

    out = []
    for name in ("speculative", "base"):
        cells = [FIGURES[k].cell(FIGURES[k].of(result, name)) for k in ("tokens_per_s", "cpu_s_per_1k",
                                                                        "accepted_per_step")]
        speedup = result.speedup.text() if name == "speculative" and result.speedup else ""
        out.append(f"| {label} | {name} | {' | '.join(cells)} | {speedup} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", dest="overrides", action="append", default=None)
    provenance.add_argument(parser)
    args = parser.parse_args()
    from prefect_adapters.ephemeral import prefect_defaults

    prefect_defaults()
    from flows.specdec import run_specdec
    from specops.results.speedup import paired_speedup

    results = {}
    for profile, (_label, own) in ENGINES.items():
        result = run_specdec(profile, [*(args.overrides or DEFAULTS), *SETTINGS, *PAIRED, *own])
        print(f"{profile}: {result.verdict.value}, {result.run_dir}")
        results[profile] = result
    cpus = sorted({r.host.cpu_model for r in results.values()})
    runtime, vllm = results["ngram-local"], results["ngram-vllm-serve-cpu"]
    lines = [f"host CPU: {', '.join(cpus)} ({runtime.host.cores} cores); n-gram {', '.join(SETTINGS)}; "
             f"{runtime.speedup.prompts} prompts x {runtime.benchmark.output_tokens} tokens, concurrency 1", "",
             "| engine | variant | tokens/s | CPU s/1k tokens | accepted/step | speedup over its base |",
             "|---|---|---|---|---|---|"]
    for profile, result in results.items():
        lines += rows(ENGINES[profile][0], result)
    lines.append("")
    for name in ("base", "speculative"):
        ratio = paired_speedup(vllm.variant(name).samples, runtime.variant(name).samples)
        lines.append(f"vLLM / runtime, {name}: {ratio.point:.2f}x, paired by prompt (no interval: one run per engine, "
                     "and requests cannot interleave across their APIs, Triton's generate and OpenAI completions)"
                     if ratio else f"vLLM / runtime, {name}: no paired prompts")
    print("\n" + "\n".join(lines))
    provenance.record("engine_bench", "The embedded runtime vs vLLM's CPU build, same n-gram settings", lines,
                      args.figures)


if __name__ == "__main__":
    main()

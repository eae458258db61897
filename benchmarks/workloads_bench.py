"""How much speculation pays per kind of request: the replay's best n-gram and suffix settings served on vLLM's CPU
build against its base over Spec-Bench's categories.

    .venv/bin/python benchmarks/workloads_bench.py [--per-category 3] [--categories a,b,...] [--set KEY=VALUE ...]
                                                                                         (make bench-workloads)

Sized for a 2-core host: 7 of Spec-Bench's 13 categories (writing, coding, math_reasoning, translation, qa, rag,
summarization) x 3 prompts x 64 tokens, chat requests (SmolLM2's chat template), concurrency 1, requests interleaved
by AIPerf; about 15 minutes here. The prompts are Spec-Bench's file from ../shared/reference when it is there (a copy
known by its checksum), else the named workload `spec-bench`, fetched from its pinned commit. For each method the
replay ranks its settings on the target's greedy answers to these prompts and the best is served. One table per
method: each category's speedup with its 95% interval, the served accepted tokens per step beside the replay's
prediction, and the overall figure over the equal mix; one plot of the categories with their intervals. Nothing
here asserts a target.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import provenance

from specops.results.figures import interval_text, shown

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "spec_bench" / "question.jsonl"
CATEGORIES = ["writing", "coding", "math_reasoning", "translation", "qa", "rag", "summarization"]
PROFILES = {"ngram": "ngram-vllm-serve-cpu", "suffix": "suffix-vllm-serve-cpu"}
DESIGN = ["benchmark.tool=aiperf", "benchmark.interleave=true", "benchmark.pairing=requests",
          "benchmark.warmup_requests=0", "benchmark.output_tokens=64", "comparison.lossless_prompts=4"]


def sized(categories: list[str], per_category: int) -> list[str]:
    prompts = str(REFERENCE) if REFERENCE.is_file() else "spec-bench"
    return [f"benchmark.prompts={prompts}", f"benchmark.categories=[{', '.join(categories)}]",
            f"benchmark.per_category={per_category}", *DESIGN]


def best(method: str, overrides: list[str]):
    """The replay's best setting of this method on these prompts (suffix: its cross-request cache off)."""
    from specops.profile.loader import load_profile
    from specops.replay.grid import ranked
    from specops.replay.run import predict
    from specops.sweep.replayed import replay_family

    loaded = load_profile(PROFILES[method], overrides)
    return ranked(predict(loaded, replay_family(loaded)))[0]


def table(method: str, prediction, result) -> list[str]:
    lines = [f"### {method}: {prediction.label} (the replay's best: {prediction.tokens_per_step:.2f} tokens per step)",
             "", f"{result.verdict.value}; overall {result.speedup.text() if result.speedup else 'n/a'} "
             f"{result.workload.mix_text() if result.workload else ''}; {result.run_dir}", "",
             "| category | prompts | speedup over vLLM's base (95%) | pays? | served accepted/step | replay's |",
             "|---|---|---|---|---|---|"]
    for f in result.workload.categories if result.workload else []:
        s = f.speedup
        lines.append(f"| {f.category} | {f.prompts} | {interval_text(s.point, s.low, s.high) if s else '-'} | "
                     f"{f.verdict()} | {shown(f.accepted_per_step)} | {shown(f.predicted_accepted_per_step)} |")
    return lines + [""]


def plot(results: dict[str, object], path: Path) -> Path:
    from specops.charts.figure import plt, save_figure

    fig, ax = plt.subplots(figsize=(9, 3.8))
    for offset, (method, result) in zip((-0.15, 0.15), results.items()):
        figures = result.workload.categories
        xs = [i + offset for i in range(len(figures))]
        points = [f.speedup.point for f in figures]
        errors = [[p - (f.speedup.low or p) for p, f in zip(points, figures)],
                  [(f.speedup.high or p) - p for p, f in zip(points, figures)]]
        ax.errorbar(xs, points, yerr=errors, fmt="o", capsize=4, elinewidth=2, label=method)
        ax.set_xticks(range(len(figures)), [f.category for f in figures], rotation=20)
    ax.axhline(1.0, color="#555555", linestyle="--", linewidth=1, label="base")
    ax.set_yscale("log")  # a ratio's interval is symmetric on the log scale
    ax.set_yticks([0.5, 1, 2, 4], ["0.5x", "1x", "2x", "4x"])
    ax.set_ylabel("speedup over vLLM's base (95%)")
    ax.set_title("Spec-Bench categories on vLLM's CPU build (SmolLM2-135M, chat, concurrency 1)", fontsize=10)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--categories", default=",".join(CATEGORIES))
    parser.add_argument("--per-category", type=int, default=3)
    parser.add_argument("--method", choices=[*PROFILES, "all"], default="all")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="more profile overrides")
    parser.add_argument("--out", type=Path, default=Path("artifacts/bench-workloads"))
    provenance.add_argument(parser)
    args = parser.parse_args()
    overrides = [*sized(args.categories.split(","), args.per_category), *args.overrides]
    from prefect_adapters.ephemeral import prefect_defaults

    prefect_defaults()
    from flows.specdec import run_specdec

    lines, results = [], {}
    for method in (PROFILES if args.method == "all" else [args.method]):
        prediction = best(method, overrides)
        print(f"{method}: serving the replay's best, {prediction.label}", flush=True)
        results[method] = run_specdec(PROFILES[method], [*overrides, *prediction.setting.overrides()])
        lines += table(method, prediction, results[method])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "workloads.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"plot: {plot(results, args.out / 'workloads.png')}; table: {args.out / 'workloads.md'}")
    provenance.record("workloads_bench", "Speedup per Spec-Bench category, the replay's best n-gram and suffix "
                      "settings on vLLM's CPU build", [line.replace("### ", "**", 1) + "**" if line.startswith("### ")
                                                       else line for line in lines], args.figures)


if __name__ == "__main__":
    main()

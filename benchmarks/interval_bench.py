"""How repeatable is a speedup? ngram-local three times back to back at two sizes, each with its interval.

    .venv/bin/python benchmarks/interval_bench.py [--repeats 3] [--profile ngram-local]

Size "demo" is the profile as shipped (what `make demo` runs); size "16x128" is 16 requests x
128 output tokens with `benchmark.rounds=3` (interleaved). For each run it prints the paired
speedup with its 95% bootstrap interval and the interval's half-width; per size, whether all
intervals overlap. Figures come from the runs; nothing here asserts a target.
"""
from __future__ import annotations

import argparse
import json
import time

SIZES = {
    "demo": [],
    "16x128": ["benchmark.num_requests=16", "benchmark.output_tokens=128", "benchmark.rounds=3",
               "benchmark.interleave=true"],
}


def overlap(intervals: list[tuple[float, float]]) -> bool:
    """True when one point lies inside every interval."""
    return max(lo for lo, _ in intervals) <= min(hi for _, hi in intervals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="ngram-local")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    args = parser.parse_args()
    from cli.main import prefect_defaults

    prefect_defaults()
    from flows.specdec import run_specdec
    from specops.rundir import artifacts_root

    rows = []
    for size in args.sizes:
        for repeat in range(args.repeats):
            start = time.monotonic()
            result = run_specdec(args.profile, SIZES[size])
            s = result.speedup
            rows.append({"size": size, "repeat": repeat + 1, "run_id": result.run_id, "verdict": result.verdict.value,
                         "speedup": s.point, "low": s.low, "high": s.high, "half_width": s.half_width,
                         "text": s.text(), "resampled": s.resampled, "throughput_ratio": s.throughput_ratio,
                         "wall_s": time.monotonic() - start})
    lines = ["| size | run | speedup (95% interval) | half-width | tools' tokens/s ratio | verdict | wall |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['size']} | {r['repeat']} | {r['text']} | {r['half_width']:.1%} | "
                     f"{r['throughput_ratio']:.2f}x | {r['verdict']} | {r['wall_s']:.0f} s |")
    summary = []
    for size in args.sizes:
        mine = [r for r in rows if r["size"] == size]
        together = overlap([(r["low"], r["high"]) for r in mine])
        summary.append(f"{size}: intervals {'overlap' if together else 'do NOT overlap'}; widest half-width "
                       f"{max(r['half_width'] for r in mine):.1%}; interval over {mine[0]['resampled']}")
    table = "\n".join(lines + [""] + summary)
    out = artifacts_root() / "bench-intervals" / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(table + "\n")
    (out / "results.json").write_text(json.dumps(rows, indent=2))
    print("\n" + table + f"\n\n(written to {out})")


if __name__ == "__main__":
    main()

"""How repeatable is a speedup? ngram-local back to back in each design, each run with its interval.

    .venv/bin/python benchmarks/interval_bench.py [--repeats 3] [--designs requests rounds] [--profile ngram-local]

Both designs measure 16 requests x 128 output tokens per variant, both servers up:
- "requests": one AIPerf run per round whose requests alternate between the servers (benchmark.pairing
  requests), one round; the interval is over the prompts;
- "rounds": genai-perf, one run per variant and round, 3 rounds alternating A B A B (what main measured on
  2026-11-23); the interval is over the rounds.
For each run it prints the paired speedup with its 95% interval, the half-width and the run's wall time; per
design, whether all intervals overlap. Figures come from the runs; nothing here asserts a target.
"""
from __future__ import annotations

import argparse
import json
import time

import provenance

SIZE = ["benchmark.num_requests=16", "benchmark.output_tokens=128", "benchmark.interleave=true"]
DESIGNS = {
    "requests": [*SIZE, "benchmark.tool=aiperf", "benchmark.pairing=requests", "benchmark.rounds=1"],
    "rounds": [*SIZE, "benchmark.tool=genai-perf", "benchmark.pairing=rounds", "benchmark.rounds=3"],
}


def overlap(intervals: list[tuple[float, float]]) -> bool:
    """True when one point lies inside every interval."""
    return max(lo for lo, _ in intervals) <= min(hi for _, hi in intervals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="ngram-local")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=list(DESIGNS))
    provenance.add_argument(parser)
    args = parser.parse_args()
    from prefect_adapters.ephemeral import prefect_defaults

    prefect_defaults()
    from flows.specdec import run_specdec
    from specops.settings import artifacts_root

    rows = []
    for design in args.designs:
        for repeat in range(args.repeats):
            start = time.monotonic()
            result = run_specdec(args.profile, DESIGNS[design])
            s = result.speedup
            rows.append({"design": design, "repeat": repeat + 1, "run_id": result.run_id,
                         "verdict": result.verdict.value,
                         "speedup": s.point, "low": s.low, "high": s.high, "half_width": s.half_width,
                         "text": s.text(), "resampled": s.resampled, "throughput_ratio": s.throughput_ratio,
                         "wall_s": time.monotonic() - start})
            print(f"\n[bench-intervals] {design} run {repeat + 1}: {s.text()}, interval over {s.resampled}, "
                  f"wall {rows[-1]['wall_s']:.0f} s", flush=True)
    lines = ["| design | run | speedup (95% interval) | half-width | tools' tokens/s ratio | verdict | wall |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        width = f"{r['half_width']:.1%}" if r["half_width"] is not None else "-"
        lines.append(f"| {r['design']} | {r['repeat']} | {r['text']} | {width} | "
                     f"{r['throughput_ratio']:.2f}x | {r['verdict']} | {r['wall_s']:.0f} s |")
    summary = []
    for design in args.designs:
        mine = [r for r in rows if r["design"] == design and r["low"] is not None]
        if not mine:
            summary.append(f"{design}: no run gave an interval")
            continue
        together = overlap([(r["low"], r["high"]) for r in mine])
        widths = ", ".join(format(r["half_width"], ".1%") for r in mine)
        summary.append(f"{design}: intervals {'overlap' if together else 'do NOT overlap'}; half-widths {widths}; "
                       f"mean wall "
                       f"{sum(r['wall_s'] for r in mine) / len(mine):.0f} s; interval over {mine[0]['resampled']}")
    table = "\n".join(lines + [""] + summary)
    out = artifacts_root() / "bench-intervals" / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(table + "\n")
    (out / "results.json").write_text(json.dumps(rows, indent=2))
    print("\n" + table + f"\n\n(written to {out})")
    provenance.record("interval_bench", f"{args.profile} {args.repeats}x per design", table.splitlines(), args.figures)


if __name__ == "__main__":
    main()

"""Does speculation pay on the real engine? The replay's best n-gram and suffix settings, served on vLLM's CPU build.

    .venv/bin/python benchmarks/pays_bench.py [--concurrency 1,2,4] [--set KEY=VALUE ...]     (make bench-pays)

For each method (n-gram: ngram-vllm-serve-cpu; suffix decoding, cross-request cache off as the profile's default:
suffix-vllm-serve-cpu) `specops replay` ranks the settings on the target's greedy outputs (16 prompts x 128 tokens);
the best one is then served against vLLM's base: at concurrency 1 with requests interleaved by AIPerf (the
interval is over the prompts), above it in alternating round blocks (3 rounds: the interval is over the rounds).
One table: the setting, the replay's tokens per drafted step beside the served engine's (vLLM's counters), and the
speedup with its 95% interval and lower end. Nothing here asserts a target.
"""
from __future__ import annotations

import argparse

from specops.results.figures import figure, shown

# No warm-up: the lossless check has warmed both servers, and vLLM would count a warm-up request's drafts beside the
# measured ones, which the replay's prediction does not hold (measured 3.13 vs 3.24 predicted with one, equal without).
SIZE = ["benchmark.num_requests=16", "benchmark.output_tokens=128", "benchmark.warmup_requests=0",
        "comparison.lossless_prompts=4"]
PROFILES = {"ngram": "ngram-vllm-serve-cpu", "suffix": "suffix-vllm-serve-cpu"}
# Concurrency 1: both servers up, each prompt's requests back to back (the host's drift falls on both halves).
PAIRED = ["benchmark.tool=aiperf", "benchmark.interleave=true", "benchmark.pairing=requests"]
# Above it AIPerf cannot alternate single requests: whole rounds alternate, and 3 give an interval over rounds.
ROUNDS = ["benchmark.tool=aiperf", "benchmark.interleave=true", "benchmark.pairing=rounds", "benchmark.rounds=3"]


def best(method: str, extra: list[str]):
    """The replay's best setting of this method on the profile (suffix: with the cross-request cache off)."""
    from specops.profile.loader import load_profile
    from specops.replay.grid import ranked
    from specops.replay.run import predict
    from specops.sweep.replayed import replay_family

    loaded = load_profile(PROFILES[method], [*SIZE, *extra])
    return ranked(predict(loaded, replay_family(loaded)))[0]


def row(method: str, prediction, concurrency: int, result) -> str:
    measured = figure(result, "speculative", "acceptance", "mean_accepted_per_step")
    s = result.speedup
    interval = s.text() if s else "no speedup: no prompt measured on both variants"
    low = f"{s.low:.2f}x" if s and s.low is not None else "none (see the interval's note)"
    return (f"| {prediction.label} | {concurrency} | {shown(prediction.per_drafted_step, '.2f')} | "
            f"{shown(measured, '.2f')} | {interval} | {low} | {result.verdict.value} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", default="1,2,4", help="loads to serve each setting at (default 1,2,4)")
    parser.add_argument("--method", choices=[*PROFILES, "all"], default="all")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="more profile overrides")
    args = parser.parse_args()
    loads = [int(c) for c in args.concurrency.split(",")]
    from cli.common import prefect_defaults

    prefect_defaults()
    from flows.specdec import run_specdec

    rows = []
    for method in (PROFILES if args.method == "all" else [args.method]):
        prediction = best(method, args.overrides)
        print(f"{method}: the replay's best setting is {prediction.label} ({prediction.tokens_per_step:.2f} tokens "
              f"per step, {shown(prediction.per_drafted_step, '.2f')} per drafted step)", flush=True)
        for c in loads:
            design = PAIRED if c == 1 else ROUNDS
            result = run_specdec(PROFILES[method], [*SIZE, *args.overrides, *prediction.setting.overrides(),
                                                    *design, f"benchmark.concurrency={c}"])
            print(f"  concurrency {c}: {result.verdict.value}, {result.run_dir}", flush=True)
            rows.append(row(method, prediction, c, result))
    print("\n| setting | concurrency | replay: tokens / drafted step | served: accepted tokens / step | "
          "speedup over vLLM's base (95% interval) | lower end | verdict |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

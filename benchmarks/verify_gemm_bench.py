"""What a verification step costs on this CPU, by number of rows: stock F.linear vs verify_linear.

    python benchmarks/verify_gemm_bench.py [--reps 7] [--max-rows 12]

Two tables, medians of interleaved repetitions (so a busy neighbour slows both alike), one
torch thread, the converted SmolLM2 target (fetched into specops' cache, $SPECOPS_CACHE else ~/.cache/specops):
the target's weight matrices alone (every nn.Linear, lm_head included), and one KV-cached
forward of the whole model after a 200-token context, as the engine's verification runs it.
"""
from __future__ import annotations

import argparse
import statistics
import time

import provenance
import torch
import torch.nn.functional as F

from specops.runtime.verify_gemm import use_verify_gemm, verify_linear
from specops.settings import cache_root
from specops.sources.embedded import fetch_embedded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--max-rows", type=int, default=12)
    provenance.add_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from transformers import AutoModelForCausalLM

    model_dir = fetch_embedded(cache_root(), log=lambda line: None).path
    stock = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    routed = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    use_verify_gemm(routed)
    rows = range(1, args.max_rows + 1)

    weights = [m.weight for m in stock.modules() if isinstance(m, torch.nn.Linear)]
    gemm = _interleaved({"F.linear": F.linear, "verify_linear": verify_linear},
                        lambda fn, m: _all_linears(fn, weights, m), rows, args.reps)
    lines = _table(f"{len(weights)} weight matrices ({sum(w.numel() for w in weights) / 1e6:.0f}M params)", gemm,
                   rows)
    forward = _interleaved({"stock": stock, "routed": routed}, _forward_step(stock.config), rows, args.reps)
    lines += _table("one KV-cached forward after 200 tokens", forward, rows)
    print("\n".join(lines))
    provenance.record("verify_gemm_bench", "A verification step's cost by rows verified: F.linear vs verify_linear "
                      "(one torch thread, SmolLM2-135M)", lines, args.figures)


def _all_linears(fn, weights, m: int):
    inputs = {w.shape[1]: torch.randn(m, w.shape[1]) for w in weights}
    start = time.perf_counter()
    for w in weights:
        fn(inputs[w.shape[1]], w)
    return time.perf_counter() - start


def _forward_step(config):
    from transformers import DynamicCache

    context = torch.randint(0, config.vocab_size, (1, 200))
    caches = {}

    def run(model, m: int) -> float:
        if id(model) not in caches:
            caches[id(model)] = DynamicCache(config=config)
            model(input_ids=context, past_key_values=caches[id(model)], use_cache=True, logits_to_keep=1)
        cache = caches[id(model)]
        start = time.perf_counter()
        model(input_ids=context[:, :m], past_key_values=cache, use_cache=True)
        seconds = time.perf_counter() - start
        cache.crop(context.shape[1])
        return seconds

    return run


@torch.inference_mode()
def _interleaved(variants: dict, run, rows, reps: int) -> dict[str, dict[int, float]]:
    samples: dict[str, dict[int, list[float]]] = {name: {m: [] for m in rows} for name in variants}
    for rep in range(reps + 1):
        for m in rows:
            for name, variant in variants.items():
                seconds = run(variant, m)
                if rep:  # the first round warms every shape up
                    samples[name][m].append(seconds)
    return {name: {m: statistics.median(s) for m, s in per.items()} for name, per in samples.items()}


def _table(title: str, medians: dict[str, dict[int, float]], rows) -> list[str]:
    """A Markdown table of the medians in ms: one row per variant, one column per number of rows verified."""
    lines = ["", f"{title}, ms (median):", "", "| rows | " + " | ".join(map(str, rows)) + " |",
             "|---|" + "---|" * len(rows)]
    return lines + [f"| {name} | " + " | ".join(f"{per[m] * 1e3:.0f}" for m in rows) + " |"
                    for name, per in medians.items()]


if __name__ == "__main__":
    main()

"""Smoke request and the outputs the lossless check compares."""
from __future__ import annotations

from specops.backends.base import Backend, Server
from specops.bench.prompts import load_prompts
from specops.profile.schema import Benchmark, Comparison
from specops.variant import Variant

SMOKE_PROMPT = "def fibonacci(n):\n"


def smoke(backend: Backend, server: Server, variant: Variant) -> str:
    text = backend.generate(server, variant, SMOKE_PROMPT, 8)
    if not text:
        raise RuntimeError(f"smoke request to {variant.name} returned no text")
    return text


def check_prompts(bench: Benchmark, comparison: Comparison) -> list[str]:
    """The lossless prompts: those after the benchmark's where the source has enough, so the
    check sees prompts the benchmark did not; otherwise the source's first ones."""
    wanted = comparison.lossless_prompts
    prompts = load_prompts(bench.prompts)
    after = bench.prompt_offset + bench.num_requests + bench.warmup_requests
    start = after if after + wanted <= len(prompts) else 0
    return prompts[start : start + wanted]


def greedy_outputs(backend: Backend, server: Server, variant: Variant, prompts: list[str],
                   max_tokens: int) -> list[str]:
    return [backend.generate(server, variant, p, max_tokens) for p in prompts]

"""Smoke request and the outputs the lossless check compares."""
from __future__ import annotations

from specops.backends.base import Server, Variant, load_backend
from specops.bench.prompts import load_prompts
from specops.profile.schema import Profile

SMOKE_PROMPT = "def fibonacci(n):\n"


def smoke(profile: Profile, server: Server, variant: Variant) -> str:
    text = load_backend(profile).generate(server, variant, SMOKE_PROMPT, 8)
    if not text:
        raise RuntimeError(f"smoke request to {variant.name} returned no text")
    return text


def check_prompts(profile: Profile) -> list[str]:
    """The lossless prompts: those after the benchmark's where the source has enough, so the
    check sees prompts the benchmark did not; otherwise the source's first ones."""
    bench, wanted = profile.benchmark, profile.comparison.lossless_prompts
    prompts = load_prompts(bench.prompts)
    after = bench.prompt_offset + bench.num_requests + bench.warmup_requests
    start = after if after + wanted <= len(prompts) else 0
    return prompts[start : start + wanted]


def greedy_outputs(profile: Profile, server: Server, variant: Variant, prompts: list[str]) -> list[str]:
    backend = load_backend(profile)
    return [backend.generate(server, variant, p, profile.comparison.lossless_max_tokens) for p in prompts]

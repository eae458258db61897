"""Smoke request and the outputs the lossless check compares."""
from __future__ import annotations

import time
from dataclasses import dataclass

from specops.backends.base import Backend, Server
from specops.bench.prompts import load_prompts
from specops.host.liveness import Watchdog
from specops.profile.schema import Benchmark, Comparison
from specops.run.variant import Variant

SMOKE_PROMPT = "def fibonacci(n):\n"


SMOKE_TOKENS = 8


@dataclass
class Pace:
    """How fast a server answered specops' own requests: seconds per requested token. An upper
    bound on its decode time per token (prefill and early stops count against it), which is
    what a benchmark's time budget needs."""

    seconds: float = 0.0
    tokens: int = 0

    def __add__(self, other: Pace) -> Pace:
        return Pace(self.seconds + other.seconds, self.tokens + other.tokens)

    @property
    def per_token_s(self) -> float:
        return self.seconds / self.tokens if self.tokens else 0.0


def watched_generate(backend: Backend, server: Server, variant: Variant, prompt: str, max_tokens: int,
                     watch: Watchdog, pace: Pace | None = None) -> str:
    """One request, given up with ServerDown as soon as the server dies or stalls."""
    start = time.monotonic()
    text = watch.call(lambda: backend.generate(server, variant, prompt, max_tokens))
    if pace is not None:
        pace.seconds += time.monotonic() - start
        pace.tokens += max_tokens
    return text


def smoke(backend: Backend, server: Server, variant: Variant, pace: Pace | None = None) -> str:
    watch = Watchdog(server, f"smoke request to {variant.name}")
    text = watched_generate(backend, server, variant, SMOKE_PROMPT, SMOKE_TOKENS, watch, pace)
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
                   max_tokens: int, pace: Pace | None = None) -> list[str]:
    watch = Watchdog(server, f"lossless check of {variant.name}")
    return [watched_generate(backend, server, variant, p, max_tokens, watch, pace) for p in prompts]

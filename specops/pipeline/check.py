"""Smoke request, the outputs the lossless check compares, and the check: at temperature 0 the speculative server
must say exactly what the base says."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from specops.backends.base import Backend, Server
from specops.bench.prompts import load_prompts
from specops.host.liveness import Watchdog
from specops.profile.schema import Benchmark, Comparison
from specops.results.model import Divergence, Lossless
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


def compare_outputs(base: list[str], speculative: list[str], window: int = 40) -> Lossless:
    """Compare outputs prompt by prompt; record the first diverging prompt and position."""
    if len(base) != len(speculative):
        return Lossless(compared=0, mismatches=0,
                        reasons=[f"output counts differ: base {len(base)}, speculative {len(speculative)}"])
    first, mismatches = None, 0
    for index, (b, s) in enumerate(zip(base, speculative)):
        if b == s:
            continue
        mismatches += 1
        if first is None:
            pos = len(os.path.commonprefix([b, s]))
            lo = max(0, pos - window // 2)
            first = Divergence(prompt_index=index, position=pos, base=b[lo : pos + window // 2],
                               speculative=s[lo : pos + window // 2])
    return Lossless(compared=len(base), mismatches=mismatches, first=first)

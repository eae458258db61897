"""Smoke request, the outputs the lossless check compares, and the check: at temperature 0 the speculative server
must say exactly what the base says."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from specops.backends.base import Backend, Server
from specops.bench.sampling import Workload
from specops.host.liveness import Watchdog
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
                     watch: Watchdog, pace: Pace | None = None, chat: bool = False) -> str:
    """One request (a chat request where the benchmark sends them so), given up with ServerDown as soon as the
    server dies or stalls."""
    start = time.monotonic()
    send = backend.generate_chat if chat else backend.generate
    text = watch.call(lambda: send(server, variant, prompt, max_tokens))
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


def cache_primed(workload: Workload, rounds: int, baseline: bool) -> list[str]:
    """Why a drafter's cross-request cache could hold a measured prompt's output before it is measured: the check
    or the warm-up sent it first, or the measured requests repeat it. The tool sends the prompt list in order,
    warm-up first, and wraps around at its end (AIPerf's sequential sampler, one per run:
    aiperf/timing/phase_orchestrator.py, aiperf/dataset/dataset_samplers.py SequentialSampler, AIPerf 0.13.0)."""
    measured, out = set(workload.measured), []
    if len(measured) < workload.requests or measured & set(workload.prompts[:workload.warmup]):
        out.append(f"{workload.warmup} warm-up + {len(workload.measured)} measured requests over {len(measured)} "
                   f"distinct prompts of {workload.source}: the measured requests repeat prompts already answered")
    if rounds > 1:
        out.append(f"{rounds} rounds: each round after the first resends the prompts to the same server")
    if baseline and (checked := measured & set(workload.check)):
        out.append(f"the lossless check's {len(checked)} prompts, sent first, are among the measured ones")
    return out


@dataclass(frozen=True)
class Checked:
    """A variant's temperature-0 outputs for the lossless comparison, and where they came from."""

    outputs: list[str]
    prompts: list[int]  # the prompts' places in the list they were taken from, in the order of `outputs`
    source: str


def benchmark_answers(answers: dict[int, str], workload: Workload, output_tokens: int) -> Checked | None:
    """The benchmark's own answers (temperature 0, every measured prompt) as the lossless check's outputs; None where
    the tool kept no text for some measured prompt: the run then checks separately."""
    measured = sorted({(workload.warmup + i) % len(workload.prompts) for i in range(workload.requests)})
    if not measured or any(i not in answers for i in measured):
        return None
    return Checked([answers[i] for i in measured], measured,
                   f"the benchmark's own answers: {len(measured)} measured prompts x {output_tokens} tokens")


def separate_check(outputs: list[str], max_tokens: int, why: str) -> Checked:
    return Checked(outputs, list(range(len(outputs))), f"a separate check of {len(outputs)} prompts x {max_tokens} "
                   f"tokens ({why})")


def greedy_outputs(backend: Backend, server: Server, variant: Variant, prompts: list[str],
                   max_tokens: int, pace: Pace | None = None, chat: bool = False) -> list[str]:
    """The lossless check's outputs, each request sent as the benchmark sends its own (chat, or raw)."""
    watch = Watchdog(server, f"lossless check of {variant.name}")
    return [watched_generate(backend, server, variant, p, max_tokens, watch, pace, chat) for p in prompts]


def compare_checked(base: Checked, speculative: Checked) -> Lossless:
    """The lossless comparison of two variants' outputs to the same prompts, saying what was compared."""
    if base.prompts != speculative.prompts:
        return Lossless(compared=0, mismatches=0, source=f"base: {base.source}; speculative: {speculative.source}",
                        reasons=["the variants' outputs are not to the same prompts: nothing to compare"])
    return compare_outputs(base.outputs, speculative.outputs).model_copy(update={"source": base.source})


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

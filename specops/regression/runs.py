"""Which runs a profile's verdicts and trends read: the profile as it is served, judged or not, and which of them
share a baseline (the hardware and the benchmark's shape)."""
from __future__ import annotations

from collections import Counter

from specops.results.history import primed
from specops.results.model import RunResult, Status


def hardware_key(result: RunResult) -> str:
    """What a baseline must share with the run: the GPUs (names and count), else the CPU and its cores."""
    if result.host.gpus:
        names = Counter(gpu.name for gpu in result.host.gpus)
        return "gpu: " + " + ".join(f"{count}x {name}" for name, count in sorted(names.items()))
    return f"cpu: {result.host.cpu_model} x{result.host.cores}"


def baseline_key(result: RunResult) -> str:
    """What makes two runs' figures comparable: the hardware, and the benchmark's shape (tool, API,
    prompts, concurrency, output length): tokens/s at concurrency 4 says nothing about concurrency 1,
    and a sweep's cells share their profile's name. Request and round counts change only precision."""
    bench = result.benchmark
    return (f"{hardware_key(result)}; {bench.tool} {bench.api} {bench.prompts}, concurrency {bench.concurrency}, "
            f"{bench.output_tokens} tokens")


def lossless_failed(result: RunResult) -> bool:
    return result.status is Status.INVALID or (result.lossless is not None and not result.lossless.valid)


def judged(result: RunResult) -> bool:
    """Measured and lossless, its drafter cache not primed with what it measured: may have metric verdicts and
    enter baselines."""
    return result.status is Status.OK and not lossless_failed(result) and not primed(result)


def never_judged(result: RunResult) -> bool:
    """Ended from outside (Ctrl-C, SIGTERM, a cancel: it says nothing of what it ran), or measured a primed drafter
    cache (a replay no user sees): never judged, neither starts nor breaks a streak, never a baseline."""
    return result.status is Status.INTERRUPTED or primed(result)


def profile_runs(history: list[RunResult]) -> list[RunResult]:
    """The runs of the profile as it is served: a sweep's cells (other draft lengths and loads) and an upgrade
    check's sides (other engines) left out."""
    return [r for r in history if r.role.as_served]


def chronological(history: list[RunResult]) -> list[RunResult]:
    return sorted(history, key=lambda r: (r.started_at, r.uid))

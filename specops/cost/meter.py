"""A cost meter: cumulative readings of what a server spends, taken around benchmark windows.

The meter knows nothing of backends: a backend hands in a `cpu_seconds` callable (its process
tree, `specops.cost.cpu`, or its container, `specops.cost.container_cpu`) and a source text; the
GPU side reads NVML energy counters of the server's devices. A `Window` reads both before and
after each benchmark window, sums over windows (rounds), and gives the `Cost` record.
A reading that fails (the server died, the driver reloaded) leaves that quantity None with the
reason as its source, rather than failing the benchmark it measures.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Self

from specops.cost import nvml
from specops.results.model import Cost

CpuReader = Callable[[], float]  # cumulative CPU seconds
EnergyReader = Callable[[], Mapping[int, int]]  # cumulative millijoules per GPU index
# What a failed reading raises: ProcessGone, ContainerStatsMissing, EnergyCounterError (RuntimeError),
# docker/requests errors (OSError). Anything else is a bug and propagates.
READ_ERRORS = (RuntimeError, OSError)


class CpuWentBackwards(RuntimeError):
    """A process tree's reading fell: a descendant's CPU left the tree (reaped outside it)."""


def cpu_delta(before: float, after: float) -> float:
    if after < before:
        raise CpuWentBackwards(f"the CPU reading fell from {before:.2f}s to {after:.2f}s: a process left the "
                               "measured tree with its CPU (reaped outside it); no CPU figure for this window")
    return after - before


@dataclass(frozen=True)
class CostMeter:
    cpu_seconds: CpuReader | None = None
    cpu_source: str | None = None
    gpu_energy_mj: EnergyReader | None = None
    gpu_source: str | None = None  # where the energy comes from, or why there is none

    @classmethod
    def with_gpus(cls, cpu_seconds: CpuReader | None, cpu_source: str | None, gpus: str | None) -> CostMeter:
        """A meter whose GPU side reads NVML for the profile's `gpus` string ("none": no GPU side)."""
        indices = nvml.gpu_indices(gpus)
        usable, source = nvml.energy_source(indices)
        reader = (lambda: nvml.energy_mj(indices)) if usable else None
        return cls(cpu_seconds, cpu_source, reader, source)

    def window(self) -> Window:
        return Window(self)


@dataclass
class _Side:
    """One quantity of a window: the start reading, the running total, and why it stopped."""

    read: Callable[[], object] | None
    delta: Callable[[object, object], float]
    source: str | None
    start: object = None
    total: float | None = 0.0
    error: str | None = None

    def __post_init__(self) -> None:
        if self.read is None:
            self.total = None

    def begin(self) -> None:
        self.start = self._read()

    def end(self) -> float | None:
        start, self.start = self.start, None
        now = self._read()
        if start is None or now is None:
            self.total = None
            return None
        try:
            spent = self.delta(start, now)
        except READ_ERRORS as exc:
            return self._fail(exc)
        if self.total is not None:
            self.total += spent
        return spent

    def _read(self) -> object:
        if self.read is None or self.error is not None:
            return None
        try:
            return self.read()
        except READ_ERRORS as exc:
            return self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        self.error, self.total = f"{type(exc).__name__}: {exc}", None

    def described(self) -> str | None:
        return f"{self.source}: failed ({self.error})" if self.error else self.source


@dataclass
class Window:
    """Readings around one or more benchmark windows: `with meter.window() as w:` or start()/stop()."""

    meter: CostMeter
    _cpu: _Side = field(init=False)
    _gpu: _Side = field(init=False)
    _open: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self._cpu = _Side(self.meter.cpu_seconds, cpu_delta, self.meter.cpu_source)
        self._gpu = _Side(self.meter.gpu_energy_mj, nvml.energy_delta_j, self.meter.gpu_source)

    def start(self) -> None:
        if self._open:
            raise RuntimeError("the cost window is already started")
        self._cpu.begin()
        self._gpu.begin()
        self._open = True

    def stop(self) -> tuple[float | None, float | None]:
        """(CPU seconds, GPU joules) of this window; None where there is no reading."""
        if not self._open:
            raise RuntimeError("the cost window was not started")
        self._open = False
        return self._cpu.end(), self._gpu.end()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._open:
            self.stop()

    @property
    def totals(self) -> tuple[float | None, float | None]:
        """(CPU seconds, GPU joules) summed over every stopped window."""
        return self._cpu.total, self._gpu.total

    def cost(self, output_tokens: float) -> Cost:
        """The `Cost` record of everything measured, for the tokens the windows produced."""
        cpu, gpu = self.totals
        return Cost(output_tokens=output_tokens, cpu_seconds=cpu, gpu_energy_j=gpu,
                    cpu_source=self._cpu.described(), gpu_source=self._gpu.described())

"""A cost meter: cumulative readings of what a server spends, taken around benchmark windows.

The meter knows nothing of backends: a backend hands in a `cpu_seconds` callable (its process
tree or its container, both below) and a source text; the
GPU side reads NVML energy counters of the server's devices. A `Window` reads both before and
after each benchmark window, sums over windows (rounds), and gives the `Cost` record.
A reading that fails (the server died, the driver reloaded) leaves that quantity None with the
reason as its source, rather than failing the benchmark it measures.

The process-tree reader (`process_tree_cpu_seconds`) sums user+system seconds of the root process and every live
descendant, plus what each has collected from children it reaped (`children_user`/`children_system`): a process
counts while it lives and, once its parent waits for it, through that parent, so the difference of two readings is
what the tree spent in between. Lost from a reading: descendants reaped by a process outside the tree (a
double-forked daemon reparented to init or a subreaper); zombies never waited for, once init reaps them; a
descendant that exits between the walk and its own read. Readings are in clock ticks (10 ms): take windows of
seconds.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

import psutil

from specops.cost import nvml
from specops.host.tracking import CREATE_TIME_TOLERANCE_S
from specops.results.model import Cost

ZERO_TIME = "0001-01-01"  # Go's zero time.Time: the daemon had nothing to read
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


class CpuReadError(RuntimeError):
    """The tree's CPU cannot be read (e.g. a member belongs to another user and psutil is denied)."""


class ProcessGone(CpuReadError):
    """The measured process no longer exists (or its pid now names another process)."""


def _own_seconds(proc: psutil.Process) -> float:
    try:
        t = proc.cpu_times()
    except psutil.AccessDenied as exc:
        raise CpuReadError(f"no access to the CPU times of process {proc.pid}: {exc}") from exc
    return t.user + t.system + t.children_user + t.children_system


def _root(pid: int, create_time: float | None) -> psutil.Process:
    try:
        proc = psutil.Process(pid)
        started = proc.create_time()
    except psutil.NoSuchProcess as exc:
        raise ProcessGone(f"process {pid} has exited: no CPU reading for its tree") from exc
    if create_time is not None and abs(started - create_time) >= CREATE_TIME_TOLERANCE_S:
        raise ProcessGone(f"pid {pid} was recycled: it now names a process created at {started:.2f}, "
                          f"not the server created at {create_time:.2f}")
    return proc


def process_tree_cpu_seconds(pid: int, create_time: float | None = None) -> float:
    """User+system CPU seconds of `pid` and its live descendants, including reaped children.

    `create_time` (psutil's, as recorded when the server started) guards against a recycled
    pid. Raises ProcessGone if the root process is gone; descendants vanishing mid-walk are skipped.
    """
    root = _root(pid, create_time)
    try:
        total = _own_seconds(root)
        descendants = root.children(recursive=True)
    except psutil.NoSuchProcess as exc:
        raise ProcessGone(f"process {pid} exited while its CPU was being read") from exc
    for child in descendants:
        try:
            total += _own_seconds(child)
        except psutil.NoSuchProcess:  # exited since the walk; its parent's children_* takes it once reaped
            continue
    return total


class ContainerStatsMissing(RuntimeError):
    """The daemon's stats carry no CPU usage (the container is not running, or the daemon hides it)."""


def container_cpu_seconds(container: Any) -> float:
    """Cumulative CPU seconds of a docker-py Container: its cgroup's whole usage, from the Docker stats API.

    `cpu_stats.cpu_usage.total_usage` is cumulative nanoseconds of every process in the container's cgroup (cgroup
    v2 `cpu.stat usage_usec` x 1000, v1 `cpuacct.usage`), exited processes included, so nothing escapes it. Stats
    are asked one-shot (API >= 1.41): the daemon answers at once instead of sampling twice, a second apart."""
    from docker.errors import InvalidVersion

    try:
        stats = container.stats(stream=False, one_shot=True)
    except InvalidVersion:  # API < 1.41: the daemon samples twice before answering
        stats = container.stats(stream=False)
    stats = stats or {}
    total = ((stats.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage")
    # A container that is not running gets zeroed stats read at Go's zero time, not an error.
    if total is None or str(stats.get("read", "")).startswith(ZERO_TIME):
        name = getattr(container, "name", None) or getattr(container, "id", "?")
        status = getattr(container, "status", None)
        raise ContainerStatsMissing(f"container {name} (status {status}): no CPU usage in its stats "
                                    f"(cpu_stats.cpu_usage.total_usage missing or read at zero time); is it running?")
    return total / 1e9

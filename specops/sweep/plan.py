"""A sweep as a plan: the servers it still has to start and the cells each measures, given the cells kept so far
(by an earlier sweep of the same settings, killed half-way, or by this run); and the sweep run so far."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from specops.backends.base import Backend
from specops.bench.sampling import Workload
from specops.bench.tool import BenchTool
from specops.pipeline.summarize import RunFacts
from specops.profile.loader import LoadedProfile, overridden
from specops.results.model import Lossless, VariantRecord, Window
from specops.results.paired import Design
from specops.results.predicted import Predicted
from specops.run.rundir import RunDir
from specops.sources.schemes import Models
from specops.sweep.cells import CellStore
from specops.sweep.grid import BASE_SERIES, Series, cell_key


@dataclass(frozen=True)
class ServerGroup:
    """One server to start, and the concurrencies measured on it (a cell each)."""

    series: Series
    concurrencies: tuple[int, ...]


def plan_sweep(series: Sequence[Series], concurrencies: Sequence[int], kept: Collection[tuple[str, int]]
               ) -> tuple[ServerGroup, ...]:
    """A server per series lacking cells of `kept` (series name, concurrency), measuring only those (each beside
    the base's server, which the sweep starts once, before the first of them: BASE_GROUP in its record of
    servers)."""
    lacking = [ServerGroup(s, tuple(c for c in concurrencies if (s.name, c) not in kept)) for s in series]
    return tuple(group for group in lacking if group.concurrencies)


# The base's server in a sweep's record of the servers it started: up beside every other, measuring no cell alone.
BASE_GROUP = ServerGroup(BASE_SERIES, ())


@dataclass(frozen=True)
class SweepRun:
    """A sweep run so far: what every step shares (`facts` records what its models and servers report as they
    come), its base cells, the servers it started, in order, and the models it prepared for them (None while no cell
    needed a server). A measurement returns the next one."""

    loaded: LoadedProfile
    overrides: tuple[str, ...]
    backend: Backend
    tool: BenchTool
    run: RunDir
    store: CellStore
    facts: RunFacts = field(default_factory=RunFacts)
    served: tuple[ServerGroup, ...] = ()
    models: Models | None = None
    tokenizer: Path | None = None
    workload: Workload | None = None  # the prompts every cell measures, read with the models

    def profile(self, series: Series, c: int) -> LoadedProfile:
        """The profile as the cell runs it (the user's overrides, then the series')."""
        return overridden(self.loaded, series.overrides(c))

    def key(self, series: Series, c: int) -> str:
        """A plain K series' settings are none: its key is the one it had before series took settings."""
        return cell_key(self.loaded.sha256, [*self.overrides, *series.schedule, *series.settings], series.k, c)

    def keys(self, series: Sequence[Series], concurrencies: Sequence[int]) -> dict[tuple[str, int], str]:
        """The keys of the series' cells, by (series name, concurrency)."""
        return {(s.name, c): self.key(s, c) for s in series for c in concurrencies}

    def schedule(self, overrides: list[str] | None, c: int) -> Series | None:
        """The recommended per-load schedule as a series up to its largest K (None: the backend takes none)."""
        if not overrides:
            return None
        return Series(self.profile(Series(None, tuple(overrides)), c).profile.method.draft_length(), tuple(overrides))

    def cell_facts(self, records: list[VariantRecord], lossless: Lossless | None, window: Window,
                   design: tuple[Design, str | None], predicted: Predicted | None = None) -> RunFacts:
        """A cell's facts: its records (speculative, then the base beside it), paired by `design`, the replay's
        prediction for its setting; a snapshot of the models and servers so far (later steps do not change a kept
        cell)."""
        return RunFacts(models=dict(self.facts.models), variants=list(records), lossless=lossless,
                        cached_steps=dict(self.facts.cached_steps), servers=dict(self.facts.servers), window=window,
                        design=design, predicted=predicted, workload=self.workload)

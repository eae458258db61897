"""A sweep as a plan: the servers it still has to start and the cells each measures, given the cells kept so far
(by an earlier sweep of the same settings, killed half-way, or by this run); and the sweep run so far."""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from specops.backends.base import Backend
from specops.bench.tool import BenchTool
from specops.pipeline.summarize import RunFacts
from specops.profile.loader import LoadedProfile, overridden
from specops.results.model import Lossless, VariantRecord, Window
from specops.run.rundir import RunDir
from specops.sources.schemes import ModelArtifact
from specops.sweep.cells import BaseCell, CellStore
from specops.sweep.grid import BASE_SERIES, Series, cell_key


@dataclass(frozen=True)
class ServerGroup:
    """One server to start, and the concurrencies measured on it (a cell each)."""

    series: Series
    concurrencies: tuple[int, ...]


def plan_sweep(series: Sequence[Series], concurrencies: Sequence[int], kept: Collection[tuple[int, int]],
               kept_bases: Collection[int]) -> tuple[ServerGroup, ...]:
    """A server per series lacking cells of `kept` (K, concurrency), measuring only those, after one base server
    for the concurrencies where a missing cell lacks the base cell it is compared with."""
    lacking = [ServerGroup(s, tuple(c for c in concurrencies if (s.k, c) not in kept)) for s in series]
    lacking = [group for group in lacking if group.concurrencies]
    bases = tuple(sorted({c for group in lacking for c in group.concurrencies} - set(kept_bases)))
    return (*([ServerGroup(BASE_SERIES, bases)] if bases else []), *lacking)


@dataclass(frozen=True)
class SweepRun:
    """A sweep run so far: what every step shares (`facts` records what its models and servers report as they
    come), its base cells, the servers it started, in order, and the models it prepared for them (target None while
    no cell needed a server). A measurement returns the next one."""

    loaded: LoadedProfile
    overrides: tuple[str, ...]
    backend: Backend
    tool: BenchTool
    run: RunDir
    store: CellStore
    facts: RunFacts = field(default_factory=RunFacts)
    bases: Mapping[int, BaseCell] = field(default_factory=dict)
    served: tuple[ServerGroup, ...] = ()
    target: ModelArtifact | None = None
    draft: ModelArtifact | None = None
    tokenizer: Path | None = None

    def profile(self, series: Series, c: int) -> LoadedProfile:
        """The profile as the cell runs it (the user's overrides, then the series')."""
        return overridden(self.loaded, series.overrides(c))

    def key(self, series: Series, c: int) -> str:
        return cell_key(self.loaded.sha256, [*self.overrides, *series.schedule], series.k, c)

    def keys(self, series: Sequence[Series], concurrencies: Sequence[int]) -> dict[tuple[int | None, int], str]:
        """The keys of the series' cells and of the base cells not known yet (K None), by (K, concurrency)."""
        return {(s.k, c): self.key(s, c) for s in [BASE_SERIES, *series] for c in concurrencies
                if s.k is not None or c not in self.bases}

    def schedule(self, overrides: list[str] | None, c: int) -> Series | None:
        """The recommended per-load schedule as a series up to its largest K (None: the backend takes none)."""
        if not overrides:
            return None
        return Series(self.profile(Series(None, tuple(overrides)), c).profile.method.draft_length(), tuple(overrides))

    def cell_facts(self, record: VariantRecord, base: BaseCell, lossless: Lossless | None, window: Window
                   ) -> RunFacts:
        """A speculative cell's facts: its record against the base's at its concurrency, the servers both reported."""
        return RunFacts(models=dict(self.facts.models), variants=[record, base.variant], lossless=lossless,
                        cached_steps=dict(self.facts.cached_steps), servers={**base.servers, **self.facts.servers},
                        window=window)

"""What a sweep returns and writes: every cell, where speculation stops paying, the best K per load."""
from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict

from specops.run.variant import BASE, SPECULATIVE
from specops.sweep.analysis import Cell, Choice, Crossover, crossover
from specops.sweep.by_category import category_choices, category_lines
from specops.sweep.grid import SweepGrid
from specops.sweep.plan import SweepRun
from specops.sweep.schedule import Recommendation
from specops.sweep.table import format_sweep


class SweepOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: str
    overrides: list[str]
    grid: SweepGrid
    run_dir: str
    cells: list[Cell]
    crossovers: dict[str, Crossover]  # series label (K=4, or K=4 min=1 max=5) -> where it stops paying
    choices: dict[int, Choice]  # concurrency -> the K (and setting) to serve there (None: none beat the base), why
    recommendation: Recommendation
    # The recommended schedule served once and measured at each concurrency (k = its largest K); empty where the
    # backend takes no schedule from the profile, no K was named, or the sweep measured one concurrency.
    schedule_cells: list[Cell] = []
    measured: list[str]  # cells measured by this run, e.g. "k2-c4", "base-c4"; the rest came from the cache
    server_starts: dict[str, int]  # variant -> servers this run started ("speculative" once per draft length)
    table: str  # the text table, crossovers and recommendation (specops.sweep.table.format_sweep), per category
    # category -> concurrency -> the series its own prompts recommend (empty: the prompts have no categories)
    by_category: dict[str, dict[int, Choice]] = {}

    @property
    def best(self) -> dict[int, int | None]:
        """concurrency -> the K chosen there (None: do not speculate)."""
        return {c: choice.k for c, choice in self.choices.items()}


def sweep_outcome(sweep: SweepRun, grid: SweepGrid, cells: list[Cell], choices: dict[int, Choice],
                  recommendation: Recommendation, schedule_cells: list[Cell]) -> SweepOutcome:
    """The grid's cells (`choices`: their analysis.choose_k, which the recommendation was made from) and the served
    schedule's, analysed; what the sweep run measured, by the servers it started."""
    crossovers = crossover(cells)
    return SweepOutcome(profile=sweep.loaded.profile.name, overrides=list(sweep.overrides), grid=grid,
                        run_dir=str(sweep.run.path), cells=cells, crossovers=crossovers, choices=choices,
                        recommendation=recommendation, schedule_cells=schedule_cells,
                        measured=[f"{g.series.name}-c{c}" for g in sweep.served for c in g.concurrencies],
                        server_starts=Counter(BASE if g.series.k is None else SPECULATIVE for g in sweep.served),
                        table="\n".join([format_sweep(cells, crossovers, choices, recommendation, schedule_cells),
                                          *category_lines(cells)]).rstrip() + "\n",
                        by_category=category_choices(cells))

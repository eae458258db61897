"""What a sweep returns and writes: every cell, where speculation stops paying, the best K per load."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specops.sweep.analysis import Cell, Crossover
from specops.sweep.grid import SweepGrid
from specops.sweep.schedule import Recommendation


class SweepOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: str
    overrides: list[str]
    grid: SweepGrid
    run_dir: str
    cells: list[Cell]
    crossovers: dict[int, Crossover]
    best: dict[int, int | None]  # concurrency -> K (None: no K beat the base there)
    recommendation: Recommendation
    # The recommended schedule served once and measured at each concurrency (k = its largest K); empty where the
    # backend takes no schedule from the profile or the best K does not vary with load.
    schedule_cells: list[Cell] = []
    measured: list[str]  # cells measured by this run, e.g. "k2-c4", "base-c4"; the rest came from the cache
    server_starts: dict[str, int]  # variant -> servers this run started ("speculative" once per draft length)
    table: str  # the text table, crossovers and recommendation (specops.sweep.table.format_sweep)

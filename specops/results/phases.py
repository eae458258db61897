"""Where a run's wall time went, as its RunResult keeps it."""
from __future__ import annotations

from specops.results.metrics import Record

# The step a run waits in for its host lock and accelerator slots (prefect_adapters/slot_limits.py): queueing
# behind other runs, its own part of the wall, never orchestration.
QUEUE_STEP = "waiting for"


class Phases(Record):
    wall_s: float
    phase_s: dict[str, float] = {}  # serve, check, benchmark, draft: summed over variants
    detail: dict[str, dict[str, float]] = {}  # phase -> variant -> seconds

    # The wall time inside those phases counted once where steps overlapped (a group's servers start side by side);
    # None in records from before it was kept, whose steps never overlapped.
    measured_s: float | None = None
    # Every timed step's share of the wall, each moment counted once (run/spans.py), in the order they first ran:
    # the parts that, with the orchestration overhead, add up to wall_s. None in records from before schema 9.
    parts_s: dict[str, float] | None = None

    @property
    def measured(self) -> float:
        return sum(self.phase_s.values()) if self.measured_s is None else self.measured_s

    @property
    def overhead_s(self) -> float:
        """The wall outside every timed step (parts_s), or, in older records, outside serve, check, benchmark and
        draft."""
        return self.wall_s - (sum(self.parts_s.values()) if self.parts_s is not None else self.measured)

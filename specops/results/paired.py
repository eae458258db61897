"""A paired comparison's record: how the variants' measurements were paired, and the speedup with its interval
(results.speedup computes it)."""
from __future__ import annotations

from enum import StrEnum

from specops.results.metrics import PromptSpread, Record

# The speedup interval's level: what results record and every label prints.
LEVEL = 0.95


class Design(StrEnum):
    """How the variants' measurements are paired (pipeline.benchmark)."""

    REQUESTS = "requests"  # one tool run per round, the variants' requests alternating one by one
    ROUNDS = "rounds"  # one tool run per variant and round


class Speedup(Record):
    """Speculative over base output tokens/s, paired prompt by prompt, with an interval over the design's
    independent unit of noise (results.speedup)."""

    point: float
    low: float | None = None
    high: float | None = None
    level: float = LEVEL
    prompts: int
    rounds: int
    resampled: str  # the interval's unit and method, or why there is no interval
    throughput_ratio: float | None = None  # ratio of the tools' aggregate tokens/s, for reference
    design: Design = Design.ROUNDS
    per_prompt: PromptSpread | None = None  # None: recorded before schema 6

    def text(self) -> str:
        """The headline as a person says it, e.g. `1.31x faster (95% interval 1.18-1.45; 8 prompts, requests
        interleaved)`, `0.85x, slower (...)`, `1.02x (..., cannot tell from 1.00x; ...)`; all speedups print this."""
        if self.has_interval:
            faster, slower = self.low > 1.0, self.high < 1.0  # type: ignore[operator]
            interval = (f"{self.level:.0%} interval {self.low:.2f}-{self.high:.2f}"
                        + ("" if faster or slower else ", cannot tell from 1.00x"))
        else:  # the point as printed says which way
            faster, slower = round(self.point, 2) > 1.0, round(self.point, 2) < 1.0
            interval = f"no interval: {self.no_interval_reason}"
        direction = " faster" if faster else ", slower" if slower else ""
        return (f"{self.point:.2f}x{direction} ({interval}; {self.prompts} prompt{'s' * (self.prompts != 1)}"
                f"{f' x {self.rounds} rounds' if self.rounds > 1 else ''}, "
                f"{'requests interleaved' if self.design is Design.REQUESTS else 'round blocks'})")

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def no_interval_reason(self) -> str:  # one short clause; `resampled` keeps the whole reason and the remedy
        if (self.rounds if self.design is Design.ROUNDS else self.prompts) < 2:
            return "one round block per variant" if self.design is Design.ROUNDS else "one prompt"
        return self.resampled.removeprefix("none:").split(";")[0].strip() or "none computed"

    @property
    def half_width(self) -> float | None:
        """Half the interval, relative to the point estimate."""
        return (self.high - self.low) / 2 / self.point if self.has_interval and self.point else None  # type: ignore

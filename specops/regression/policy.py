"""What counts as a regression: per-metric thresholds, the baseline's size and age, the noise band."""
from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from specops.regression.metrics import POSITION_FAMILY, POSITION_PREFIX, metric, position


class RegressionPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # Overrides of the metrics' default thresholds, by metric name; `acceptance_rate_pos` sets
    # every position, `acceptance_rate_pos<i>` one (and wins over the family's).
    thresholds: dict[str, float] = {}
    baseline_runs: int = Field(7, ge=1)  # N: the baseline is the median of the last N ok runs
    min_baseline_runs: int = Field(3, ge=1)  # fewer than this: insufficient-data
    window_days: float = Field(30.0, gt=0)  # baseline runs started at most this long before the run
    # A violation must also leave the noise band, exp(median +- noise_mads x 1.4826 x MAD) of the
    # baseline runs' logarithms, so a noisy metric needs a bigger move than its threshold alone; 0
    # leaves the threshold alone.
    noise_mads: float = Field(3.0, ge=0)
    # Absolute speed (tokens/s, ITL) is judged `when-host-steady`: only when the run's base arm is
    # within the metric's threshold of its baseline runs' (a shared host's speed moved 2x between
    # days here, and both arms move with it); `always` for hosts known to be dedicated.
    judge_absolute: Literal["when-host-steady", "always"] = "when-host-steady"

    @field_validator("thresholds")
    @classmethod
    def _known_metrics(cls, thresholds: dict[str, float]) -> dict[str, float]:
        for name, value in thresholds.items():
            tracked = POSITION_FAMILY if name == POSITION_PREFIX else metric(name)  # unknown: names the allowed
            if tracked.higher_is_better and not 0 < value <= 1:
                raise ValueError(f"thresholds.{name} = {value}: {name} is better higher, so its threshold is a "
                                 f"fraction of the baseline in (0, 1] (default {tracked.default_threshold})")
            if not tracked.higher_is_better and value < 1:
                raise ValueError(f"thresholds.{name} = {value}: {name} is better lower, so its threshold is a "
                                 f"multiple of the baseline >= 1 (default {tracked.default_threshold})")
        return thresholds

    @model_validator(mode="after")
    def _enough_runs(self) -> Self:
        if self.min_baseline_runs > self.baseline_runs:
            raise ValueError(f"min_baseline_runs ({self.min_baseline_runs}) exceeds baseline_runs "
                             f"({self.baseline_runs}): no baseline could ever be sufficient")
        return self

    def threshold(self, name: str) -> float:
        """The metric's own override, else its family's, else its default."""
        if name in self.thresholds:
            return self.thresholds[name]
        if position(name) is not None and POSITION_PREFIX in self.thresholds:
            return self.thresholds[POSITION_PREFIX]
        return metric(name).default_threshold

    @property
    def window_s(self) -> float:
        return self.window_days * 86400.0

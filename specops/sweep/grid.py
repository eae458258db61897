"""The sweep grid (draft length x concurrency), the overrides of each cell, and the key a measured cell is
stored under, so a sweep run again measures only the cells it lacks."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from specops.fields import Count
from specops.methods import METHODS
from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile, load_profile, overridden
from specops.results.role import SCHEDULE_SERIES

# Bump when what a cell measures changes for the same inputs, so old cells are measured again.
# 2: the base measured beside each cell (interleaved requests, or alternating rounds), each cell with its interval.
SWEEP_CELL_VERSION = 2
# Alternating rounds per cell where requests cannot interleave (concurrency > 1): each round is one unit of the
# interval (Student t, n-1 degrees of freedom: 2 rounds give t = 12.7, 3 give 4.3).
CELL_ROUNDS = 3
K_KEY = "method.num_speculative_tokens"
C_KEY = "benchmark.concurrency"


def _distinct_sorted(values: list[int], field: str) -> list[int]:
    if not values:
        raise ValueError(f"{field}: give at least one value")
    low = [v for v in values if v < 1]
    if low:
        raise ValueError(f"{field}: every value must be >= 1, got {low}")
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        raise ValueError(f"{field}: {twice} given more than once; each value once")
    return sorted(values)


class SweepGrid(BaseModel):
    """Values of method.num_speculative_tokens x benchmark.concurrency; bounds come from the profile schema."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    draft_lengths: list[Count]
    concurrencies: list[Count]

    @field_validator("draft_lengths", "concurrencies")
    @classmethod
    def _distinct(cls, value: list[int], info: ValidationInfo) -> list[int]:
        return _distinct_sorted(value, info.field_name)

    def cells(self) -> list[tuple[int, int]]:
        """(K, concurrency) in the order a sweep measures them: every concurrency per draft length, so the
        speculative server starts once per K."""
        return [(k, c) for k in self.draft_lengths for c in self.concurrencies]


def series_dir(k: int, schedule: bool = False) -> str:
    """The directory, under a sweep's run, of one speculative server's cells (<series>/c<C>): k<K>, or
    SCHEDULE_SERIES for the recommended per-load schedule. Artifact names read it back."""
    return SCHEDULE_SERIES if schedule else f"k{k}"


@dataclass(frozen=True)
class Series:
    """The cells one server of a sweep measures: the base's (k None), draft length k's or, given `schedule` (its
    overrides), those of the per-load schedule up to draft length k."""

    k: int | None
    schedule: tuple[str, ...] = ()

    @property
    def name(self) -> str:  # its directory under the sweep's run; its cells are <name>-c<C>
        return "base" if self.k is None else series_dir(self.k, bool(self.schedule))

    def overrides(self, c: int) -> list[str]:
        """A cell's, after the user's: the schedule's, then the draft length (not the base's) and the concurrency."""
        return [*self.schedule, *([f"{K_KEY}={self.k}"] if self.k is not None else []), f"{C_KEY}={c}"]


BASE_SERIES = Series(None)


def cell_key(profile_sha256: str, overrides: list[str], k: int | None, c: int) -> str:
    """Stable id of one measured point; k None is the base at concurrency c."""
    doc = {"version": SWEEP_CELL_VERSION, "profile": profile_sha256, "overrides": list(overrides), "k": k, "c": c}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def swept_methods() -> list[str]:
    """Methods whose config has a draft length (num_speculative_tokens)."""
    return [n for n in METHODS.names() if "num_speculative_tokens" in METHODS.get(n).model_fields]


def validate_grid(profile: str | Path, overrides: list[str], grid: SweepGrid) -> LoadedProfile:
    """Load the profile with every cell's overrides, so a bad value fails before any server starts; returns
    the profile as the user's overrides give it."""
    loaded = load_profile(profile, overrides)
    origin = str(loaded.path) + (f" (with --set {' '.join(overrides)})" if overrides else "")
    owned = [o for o in overrides if o.partition("=")[0].strip() in (K_KEY, C_KEY)]
    if owned:
        raise ProfileError(origin, [("--set", f"{', '.join(owned)}: the sweep grid sets {K_KEY} and {C_KEY} per "
                                     "cell; give them as the grid's draft lengths and concurrencies")])
    method = loaded.profile.method
    if method.draft_length() == 0:
        raise ProfileError(origin, [(K_KEY, f"method {method.kind!r} of profile {loaded.profile.name!r} has no "
                                     "draft length to sweep; methods with one: "
                                     f"{', '.join(swept_methods())}")])
    for k, c in grid.cells():
        overridden(loaded, Series(k).overrides(c))
    return loaded

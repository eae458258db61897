"""The sweep grid (draft length, or settings: a draft length with other method knobs, x concurrency), the overrides
of each cell, and the key a measured cell is stored under, so a sweep run again measures only the cells it lacks."""
from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from specops.fields import Count, bounds
from specops.methods import METHODS, swept_methods
from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile, overridden
from specops.results.role import SCHEDULE_SERIES

# Bump when what a cell measures changes for the same inputs, so old cells are measured again.
# 2: the base measured beside each cell (interleaved requests, or alternating rounds), each cell with its interval.
SWEEP_CELL_VERSION = 2
# Alternating rounds per cell where requests cannot interleave (concurrency > 1): each round is one unit of the
# interval (Student t, n-1 degrees of freedom: 2 rounds give t = 12.7, 3 give 4.3).
CELL_ROUNDS = 3
K_KEY = "method.num_speculative_tokens"
C_KEY = "benchmark.concurrency"
# Knobs a sweep sets per series besides K (their values bounded by the method spec, methods/specs.py NgramMethod),
# and the short name each takes in a series' directory name and table label.
MIN_KEY, MAX_KEY = "method.prompt_lookup_min", "method.prompt_lookup_max"
SHORT = {MIN_KEY: "min", MAX_KEY: "max", "method.max_tree_depth": "depth", "method.max_spec_factor": "factor",
         "method.min_token_prob": "prob", "method.max_cached_requests": "cached"}
KNOB_FLAGS = "--ngram-min/--ngram-max"
MAX_REPLAYED = 16  # settings a sweep takes from `specops replay` (--from-replay): each is a server and its cells


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


class SweepSetting(BaseModel):
    """One series of a sweep: a draft length and other method overrides (`key=value`, e.g. the n-gram knobs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    k: Count
    overrides: tuple[str, ...] = ()


class SweepGrid(BaseModel):
    """Values of method.num_speculative_tokens x benchmark.concurrency; bounds come from the profile schema. Given
    `settings`, those are the series, in their order (e.g. a replay's rank), and draft_lengths their Ks."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    draft_lengths: list[Count]
    concurrencies: list[Count]
    settings: list[SweepSetting] = []

    @model_validator(mode="before")
    @classmethod
    def _lengths_of_settings(cls, data: dict) -> dict:
        if isinstance(data, dict) and data.get("settings") and not data.get("draft_lengths"):
            data = {**data, "draft_lengths": sorted({SweepSetting.model_validate(s).k for s in data["settings"]})}
        return data

    @field_validator("draft_lengths", "concurrencies")
    @classmethod
    def _distinct(cls, value: list[int], info: ValidationInfo) -> list[int]:
        return _distinct_sorted(value, info.field_name)

    @model_validator(mode="after")
    def _settings_distinct(self) -> SweepGrid:
        names = [s.name for s in self.series()]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"settings: {twice} given more than once; each setting once")
        if self.settings and sorted({s.k for s in self.settings}) != self.draft_lengths:
            raise ValueError(f"draft_lengths: {self.draft_lengths} are not the settings' Ks; give one or the other")
        return self

    def series(self) -> list[Series]:
        """The speculative servers, in the order the sweep starts them."""
        if self.settings:
            return [Series(s.k, settings=s.overrides) for s in self.settings]
        return [Series(k) for k in self.draft_lengths]

    def cells(self) -> list[tuple[Series, int]]:
        """(series, concurrency) in the order a sweep measures them: every concurrency per series, so each
        speculative server starts once."""
        return [(s, c) for s in self.series() for c in self.concurrencies]


def knob_settings(draft_lengths: list[int], knobs: dict[str, list[int]]) -> list[SweepSetting]:
    """The cross product of the draft lengths and each knob's values (a knob with none keeps the profile's), those
    with prompt_lookup_min > prompt_lookup_max dropped; [] where no knob has values (the plain K series)."""
    given = {key: values for key, values in knobs.items() if values}
    if not given:
        return []
    out = []
    for k, values in itertools.product(draft_lengths, itertools.product(*given.values())):
        chosen = dict(zip(given, values))
        if chosen.get(MIN_KEY, 0) <= chosen.get(MAX_KEY, chosen.get(MIN_KEY, 0)):
            out.append(SweepSetting(k=k, overrides=tuple(f"{key}={v}" for key, v in chosen.items())))
    if not out:
        raise ProfileError("sweep grid", [(KNOB_FLAGS, f"every combination has {MIN_KEY} > {MAX_KEY}: give a min "
                                                       "at most some max")])
    return out


def knob_values(flag: str, key: str, values: list[int], method: str) -> list[int]:
    """A knob's sweep values checked against the method spec's own bounds (NgramMethod cites the engines'), the
    refusal naming the flag: each once, within bounds, and a field of the profile's method."""
    low, high = bounds(METHODS.get("ngram").model_fields[key.rsplit(".", 1)[1]])
    problem = None
    if method != "ngram":
        problem = f"{key} is a knob of method 'ngram'; the profile's method is {method!r}"
    elif bad := [v for v in values if not low <= v <= high]:
        problem = f"{bad}: {key} takes {low} to {high} (the method spec's bounds)"
    elif twice := sorted({v for v in values if values.count(v) > 1}):
        problem = f"{twice} given more than once; each value once"
    if problem:
        raise ProfileError("sweep grid", [(flag, problem)])
    return values


def _knob(override: str) -> tuple[str, str]:
    """(short name, value) of a `key=value` override: min 1 for method.prompt_lookup_min=1."""
    key, _, value = override.partition("=")
    return SHORT.get(key.strip(), key.strip().rsplit(".", 1)[-1]), value.strip()


def series_dir(k: int, schedule: bool = False, settings: tuple[str, ...] = ()) -> str:
    """The directory, under a sweep's run, of one speculative server's cells (<series>/c<C>): k<K> (so a plain
    draft length keeps its old name and cells), k<K>-<knob><value>... for a setting (e.g. k4-min1-max5), or
    SCHEDULE_SERIES for the recommended per-load schedule. Artifact names read it back."""
    if schedule:
        return SCHEDULE_SERIES
    return "-".join([f"k{k}", *(re.sub(r"[^A-Za-z0-9._]+", "_", "".join(_knob(o))) for o in settings)])


def setting_label(k: int | None, settings: tuple[str, ...] | list[str] = ()) -> str:
    """A series in the table's words: K=4, or K=4 min=1 max=5."""
    return " ".join([f"K={k}", *("=".join(_knob(o)) for o in settings)])


@dataclass(frozen=True)
class Series:
    """The cells one server of a sweep measures: the base's (k None), draft length k's (with `settings`, other
    method overrides, e.g. the n-gram knobs) or, given `schedule` (its overrides), those of the per-load schedule up
    to draft length k."""

    k: int | None
    schedule: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()

    @property
    def name(self) -> str:  # its directory under the sweep's run; its cells are <name>-c<C>
        return "base" if self.k is None else series_dir(self.k, bool(self.schedule), self.settings)

    def overrides(self, c: int) -> list[str]:
        """A cell's, after the user's: the schedule's, the setting's, then the draft length (not the base's) and
        the concurrency."""
        return [*self.schedule, *self.settings, *([f"{K_KEY}={self.k}"] if self.k is not None else []),
                f"{C_KEY}={c}"]


BASE_SERIES = Series(None)


def cell_key(profile_sha256: str, overrides: list[str], k: int | None, c: int) -> str:
    """Stable id of one measured point; k None is the base at concurrency c."""
    doc = {"version": SWEEP_CELL_VERSION, "profile": profile_sha256, "overrides": list(overrides), "k": k, "c": c}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def validate_grid(loaded: LoadedProfile, grid: SweepGrid) -> LoadedProfile:
    """The loaded profile (the user's overrides given) with every cell's overrides, so a bad value fails before any
    server starts; returns it as loaded."""
    overrides = list(loaded.overrides)
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
    for series, c in grid.cells():
        overridden(loaded, series.overrides(c))
    return loaded

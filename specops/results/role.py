"""What a run is, as one typed field of its RunResult: the profile's own run, a sweep cell, a member of a comparison
or a calibration (A/A), an upgrade check's side.

The flow that starts a run hands `specdec` (or the sweep its cells) a RunRole; artifact keys, regression baselines
and the calibration noise floor read it here. Prefect tags stay labels for people and notes free text. A new
role is one ROLES.register call: its artifact names and whether it is the profile as it is served.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, model_validator

from specops.registry import Registry


class RunRole(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = "own"  # a name in ROLES
    of: str | None = None  # what it is part of: a sweep's run directory, an upgrade check's side label
    series: str | None = None  # a sweep cell's series directory: k<K>, or the schedule's
    off_engine: bool = False  # an upgrade check's side on another engine than the profile ships with

    @model_validator(mode="after")
    def _known(self) -> RunRole:
        ROLES.get(self.kind)  # an unknown kind names the known ones
        return self

    @property
    def as_served(self) -> bool:
        """A run of the profile as it is served: regression baselines and trends read only these."""
        return ROLES.get(self.kind).as_served and not self.off_engine

    def names(self, profile: str, draft_length: int | None, concurrency: int) -> tuple[tuple[str, ...], str]:
        """(artifact key parts, title) of a run of `profile` in this role."""
        spec = ROLES.get(self.kind)
        return spec.key(self, profile, concurrency), spec.title(self, profile, _load(draft_length, concurrency))


def _load(k: int | None, c: int) -> str:
    return ", ".join(([f"K={k}"] if k else []) + [f"c={c}"])


@dataclass(frozen=True)
class RoleSpec:
    as_served: bool  # regression baselines and trends read only runs of the profile as it is served
    key: Callable[[RunRole, str, int], tuple[str, ...]]  # (role, profile, concurrency) -> artifact key parts
    title: Callable[[RunRole, str, str], str]  # (role, profile, "K=2, c=4") -> the artifacts' title


def _member(kind: str) -> RoleSpec:
    """A run of a flow that runs profiles (compare, calibrate, upgrade): <flow>-<profile> keys."""
    return RoleSpec(True, lambda role, profile, c: (kind, profile),
                    lambda role, profile, load: f"{profile} - {load} ({kind} member)")


def _sweep_title(role: RunRole, profile: str, load: str) -> str:
    what = f"schedule up to {load}" if role.series == SCHEDULE_SERIES else load
    return f"{profile} - {what} (sweep cell)"


SCHEDULE_SERIES = "schedule"  # the series directory of a sweep's recommended schedule (sweep/grid.py)
OWN, SWEEP_CELL, COMPARE, CALIBRATE, UPGRADE = "own", "sweep-cell", "compare", "calibrate", "upgrade"
CALIBRATE_AB = "calibrate-ab"  # a calibration's repeat of the real comparison (A/B), the profile as served
ROLES: Registry[RoleSpec] = Registry("run role")
ROLES.register(OWN, RoleSpec(True, lambda role, profile, c: (profile,), lambda role, profile, load: profile))
# Points of a grid (other draft lengths and loads): <profile>-sweep-<series>-c<C>
ROLES.register(SWEEP_CELL, RoleSpec(False, lambda role, profile, c: (profile, "sweep", role.series or "", f"c{c}"),
                                    _sweep_title))
ROLES.register(COMPARE, _member(COMPARE))
ROLES.register(CALIBRATE, _member(CALIBRATE))  # A/A: both arms serve the base (the regression noise floor)
ROLES.register(CALIBRATE_AB, _member(CALIBRATE_AB))
ROLES.register(UPGRADE, _member(UPGRADE))  # a side on another engine is off_engine


def legacy_role(record: dict) -> dict:
    """A record from before roles (schema < 5) said what it was by note prefixes and an A/A run by its method;
    read once here, where such a record loads."""
    notes = record.get("notes") or []
    if any(str(n).startswith("sweep cell") for n in notes):
        return {"kind": SWEEP_CELL}
    if any(str(n).startswith("upgrade-check side") for n in notes):
        return {"kind": UPGRADE, "off_engine": True}
    return {"kind": CALIBRATE} if record.get("method") == "none" else {}

"""The two sides of an upgrade check: one profile, two engines or engine versions, chosen by backend overrides.

A side may set only `backend` fields (the image tag on a GPU host, e.g. backend.image=...:25.04-vllm-python-py3;
the whole engine on this CPU, e.g. `backend={kind: local}`): everything else is the profile's, with the
overrides both sides share, so the method, target, prompts and benchmark are the same on both and a change
in speedup or acceptance is the engine's.
"""
from __future__ import annotations

from dataclasses import dataclass

from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile, load_profile, overridden

BEFORE, AFTER = "before", "after"
ENGINE_SECTION = "backend"
ORIGIN = "upgrade-check"


@dataclass(frozen=True)
class Side:
    label: str  # before | after
    own: tuple[str, ...]  # the side's backend overrides
    overrides: tuple[str, ...]  # what the side runs with: the shared overrides, then its own
    backend: str  # the backend kind it resolves to
    pinned: dict[str, str]  # framework -> version from specops/versions/data (BackendConfig.pinned_versions)

    @property
    def setting(self) -> str:
        """How the side differs from the profile, as a user would type it."""
        return " ".join(f"--set {o}" for o in self.own) or "(the profile as shipped)"


def sets_engine(override: str) -> bool:
    """The override sets a backend field (`backend.image=...`, `backend={kind: local}`)."""
    return override.partition("=")[0].strip().split(".")[0] == ENGINE_SECTION


def changes_engine(overrides: list[str] | tuple[str, ...]) -> bool:
    """A run with these overrides serves the profile on another engine than it ships with: an upgrade check's
    side that is not the profile as served (its regression baselines leave it out)."""
    return any(sets_engine(o) for o in overrides)


def _engine_only(label: str, own: list[str]) -> None:
    others = [o for o in own if not sets_engine(o)]
    if others:
        raise ProfileError(ORIGIN, [(f"--{label}", f"{', '.join(others)}: a side sets only backend fields (e.g. "
                                     "backend.image=nvcr.io/nvidia/tritonserver:25.04-vllm-python-py3); give "
                                     "what both sides share as overrides (--set)")])


def side_of(loaded: LoadedProfile, label: str, own: list[str]) -> tuple[Side, LoadedProfile]:
    """The side with its own backend overrides on the profile as loaded with the shared ones (in memory)."""
    _engine_only(label, own)
    side = overridden(loaded, own)
    backend = side.profile.backend
    return Side(label, tuple(own), side.overrides, backend.kind, backend.pinned_versions()), side


def sides_of(loaded: LoadedProfile, before: list[str], after: list[str]) -> list[tuple[Side, LoadedProfile]]:
    """Both sides of the loaded profile (shared overrides applied), each with its load, validated before anything
    runs; ProfileError when a side is invalid or they are one engine."""
    sides = [side_of(loaded, BEFORE, before), side_of(loaded, AFTER, after)]
    (first, first_loaded), (_, second_loaded) = sides
    if first_loaded.resolved[ENGINE_SECTION] == second_loaded.resolved[ENGINE_SECTION]:
        raise ProfileError(ORIGIN, [("--before/--after", f"both sides resolve to the same backend settings "
                                     f"({first.backend}); an upgrade check needs two engines or engine versions, "
                                     "e.g. --after backend.image=<newer tag>")])
    return sides


def load_sides(profile: str, before: list[str], after: list[str], shared: list[str]) -> list[Side]:
    """sides_of the profile loaded from disk with the shared overrides."""
    return [side for side, _ in sides_of(load_profile(profile, list(shared)), before, after)]

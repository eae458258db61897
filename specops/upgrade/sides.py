"""The two sides of an upgrade check: one profile, two engines or engine versions, chosen by backend overrides.

A side may set only `backend` fields (the image tag on a GPU host, e.g. backend.image=...:25.04-vllm-python-py3;
the whole engine on this CPU, e.g. `backend={kind: local}`): everything else is the profile's, with the
overrides both sides share, so the method, target, prompts and benchmark are the same on both and a change
in speedup or acceptance is the engine's.
"""
from __future__ import annotations

from dataclasses import dataclass

from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile, load_profile

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


def load_side(profile: str, label: str, own: list[str], shared: list[str]) -> tuple[Side, LoadedProfile]:
    _engine_only(label, own)
    overrides = (*shared, *own)
    loaded = load_profile(profile, list(overrides))
    backend = loaded.profile.backend
    return Side(label, tuple(own), overrides, backend.kind, backend.pinned_versions()), loaded


def load_sides(profile: str, before: list[str], after: list[str], shared: list[str]) -> list[Side]:
    """Both sides, validated before anything runs; ProfileError when a side is invalid or they are one engine."""
    sides = [load_side(profile, BEFORE, before, shared), load_side(profile, AFTER, after, shared)]
    (first, first_loaded), (_, second_loaded) = sides
    if first_loaded.resolved[ENGINE_SECTION] == second_loaded.resolved[ENGINE_SECTION]:
        raise ProfileError(ORIGIN, [("--before/--after", f"both sides resolve to the same backend settings "
                                     f"({first.backend}); an upgrade check needs two engines or engine versions, "
                                     "e.g. --after backend.image=<newer tag>")])
    return [side for side, _ in sides]

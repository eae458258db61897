"""A variant: one served configuration of a run (the profile's method, or the base without speculation)."""
from __future__ import annotations

from dataclasses import dataclass

from specops.methods import METHODS, MethodConfig

SPECULATIVE = "speculative"
BASE = "base"


@dataclass(frozen=True)
class Variant:
    name: str  # "speculative" | "base" | "synthesis"
    method: MethodConfig
    # Requests the variant should serve at once; backends that batch ignore it, the embedded
    # one runs that many model instances (data synthesis sends concurrent requests).
    parallel: int = 1

    @property
    def model_name(self) -> str:
        return self.name


def base_method() -> MethodConfig:
    """Speculation off: the same target served plainly."""
    return METHODS.get("none")()


def variants_of(method: MethodConfig, baseline: bool) -> list[Variant]:
    """The speculative variant, and the base one when the run compares against it."""
    out = [Variant(SPECULATIVE, method)]
    if baseline:
        out.append(Variant(BASE, base_method()))
    return out

"""What the profile loader needs to know about a backend, without importing it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class BackendConfig(BaseModel):
    """The `backend` section of a profile; each backend subclasses it with its own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: str
    summary: ClassVar[str] = ""

    def method_problems(self, method: str) -> list[str]:
        """Refusals that depend on this config and the method together (e.g. the image tag)."""
        return []

    def method_config_problems(self, method: Any) -> list[str]:
        """Refusals that depend on the method's settings (its config model), not just its name."""
        return []


def reject_owned_keys(value: dict[str, Any], owned: frozenset[str] | set[str], field: str) -> dict[str, Any]:
    """Pass-through engine options may not set what specops writes from the profile."""
    clash = sorted(set(owned).intersection(value))
    if clash:
        raise ValueError(f"{field} may not set {', '.join(clash)}: specops writes them from the profile")
    return value


@dataclass(frozen=True)
class BackendSpec:
    name: str
    config_model: type[BackendConfig]
    methods: frozenset[str]  # the methods this backend can serve
    impl: str  # "module:Class", imported only when a run needs it
    needs_gpu: bool = False
    note: str = ""  # shown next to refusals, e.g. where an unsupported method is served instead

    def impl_class(self):
        import importlib

        module, _, attr = self.impl.partition(":")
        return getattr(importlib.import_module(module), attr)

    def supports(self, method: str) -> bool:
        return method in self.methods

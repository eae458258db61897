"""What the profile loader needs to know about a backend, without importing it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from specops.bench.target import Api
from specops.sources.hub_files import CHECKPOINT, HubFiles


class FieldError(ValueError):
    """A profile setting that cannot work (e.g. one the framework version a backend pins lacks);
    names the profile field to blame, since pydantic reports cross-field errors with loc=()."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


class BackendConfig(BaseModel):
    """The `backend` section of a profile; each backend subclasses it with its own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: str
    summary: ClassVar[str] = ""

    def on_gpu(self, registered: bool) -> bool:
        """Whether this profile's servers need a GPU host; `registered` is the registry's needs_gpu."""
        return registered

    def pinned_versions(self) -> dict[str, str]:
        """Framework -> version this config pins, as specops/versions/data records it (an upgrade check
        sets two configs' side by side); none where this host's own environment serves, which the run records."""
        return {}

    def resolve(self, method: Any) -> Any:
        """What this backend renders for `method` (a MethodConfig): its one support table.

        Pure and cheap; profile validation, plan, render and build all call it, so whatever a
        plan shows was validated at load. Raises FieldError naming the field."""
        return None


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
    methods: frozenset[str]  # the methods this backend can serve on some version it knows
    impl: str  # "module:Class", imported only when a run needs it
    apis: tuple[Api, ...]  # what its servers answer, preferred first (benchmark tools pick from these)
    needs_gpu: bool = False
    note: str = ""  # shown next to refusals, e.g. where an unsupported method is served instead
    hub_files: HubFiles = CHECKPOINT  # what its loaders read of a hub checkpoint: the download takes only these

    def impl_class(self):
        import importlib

        module, _, attr = self.impl.partition(":")
        return getattr(importlib.import_module(module), attr)

    def supports(self, method: str) -> bool:
        return method in self.methods

"""One step of `specops plan`: the commands a run would execute and the files it would write."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PlanStep:
    step: str
    commands: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # relative path -> content

"""Where the models appear in a container: named by hub id (the image's framework downloads them) or bind-mounted
read-only; a sidecar beside the rendered files carries the host side of those mounts from render to launch."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SIDECAR = "specops-container.json"  # written beside the rendered files: the host side of the mounts


@dataclass(frozen=True)
class PlacedModel:
    """How a config names a model, and the bind mount that makes that name resolve."""

    ref: str  # hub id (the container downloads it) or the path inside the container
    host: str | None = None  # None: nothing to mount (hub access)
    target: str | None = None


@dataclass(frozen=True)
class Placed:
    target: PlacedModel
    draft: PlacedModel | None

    def mounts(self) -> list[tuple[str, str]]:
        return [(m.host, m.target) for m in (self.target, self.draft) if m is not None and m.host and m.target]


def placeholder(role: str) -> str:
    return f"<{role} checkpoint from the download step>"


def sidecar(mounts: list[tuple[str, str]]) -> str:
    return json.dumps({"mounts": [list(m) for m in mounts]}, indent=2) + "\n"


def read_sidecar(repo: Path) -> list[tuple[str, str]]:
    path = Path(repo) / SIDECAR
    return [(str(h), str(t)) for h, t in json.loads(path.read_text())["mounts"]] if path.is_file() else []

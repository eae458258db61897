"""A checkpoint that already sits on local disk (trained here, copied in, mounted)."""
from __future__ import annotations

from pathlib import Path

from specops.sources.base import ModelArtifact, hash_dir


def fetch_local(path: Path) -> ModelArtifact:
    """Validate an HF-style checkpoint directory and hash its content."""
    resolved = Path(path).expanduser().resolve()
    if not resolved.exists():
        raise FileNotFoundError(f"local model path does not exist: {resolved}")
    if not resolved.is_dir():
        raise NotADirectoryError(f"local model path is not a directory: {resolved}")
    if not (resolved / "config.json").is_file():
        raise FileNotFoundError(
            f"local model path has no config.json (not an HF checkpoint dir?): {resolved}"
        )
    return ModelArtifact(path=resolved, source=f"local:{resolved}", sha256=hash_dir(resolved))

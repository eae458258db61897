"""What every model source returns, and the content hash that keys caches on it."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

# Files that change without changing the model (download locks, caches) stay out of the hash.
_IGNORED_PARTS = {".cache", ".locks", "__pycache__"}


@dataclass(frozen=True)
class ModelArtifact:
    """A model checkpoint on local disk, with where it came from."""

    path: Path
    source: str  # the profile's source string, e.g. "embedded:smollm2-135m" or "hf://org/name@rev"
    sha256: str  # content hash of the directory (see hash_dir)
    revision: str | None = None  # resolved commit for hub sources, wheel sha256 for embedded
    extra: dict[str, str] = field(default_factory=dict)
    # This fetch found it in the cache (made by an earlier run, or by the concurrent one it waited for);
    # a fact about the fetch, not the model: artifacts that differ only in it are equal.
    cached: bool = field(default=False, compare=False)


def content_files(path: Path) -> list[tuple[str, Path]]:
    """The files hash_dir hashes, as (relative path, path), in the order it hashes them."""
    root = Path(path)
    files = []
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = file.relative_to(root)
        if not _IGNORED_PARTS.intersection(rel.parts):
            files.append((str(rel), file))
    return files


def hash_dir(path: Path) -> str:
    """sha256 over relative paths and file contents, in sorted order."""
    digest = hashlib.sha256()
    for rel, file in content_files(path):
        digest.update(rel.encode() + b"\0")
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def hash_file(path: Path) -> str:
    with Path(path).open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()

"""Adapters from a parsed source reference to each scheme's fetch function."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specops.sources.base import ModelArtifact
from specops.sources.embedded import fetch_embedded
from specops.sources.hf import fetch_hf
from specops.sources.local import fetch_local
from specops.sources.schemes import SourceRef


def fetch_embedded_ref(ref: SourceRef, cache_dir: Path, log: Callable[[str], None]) -> ModelArtifact:
    return fetch_embedded(cache_dir, log=log)


def fetch_hf_ref(ref: SourceRef, cache_dir: Path, log: Callable[[str], None]) -> ModelArtifact:
    return fetch_hf(ref.name, ref.revision, cache_dir, log=log)


def fetch_local_ref(ref: SourceRef, cache_dir: Path, log: Callable[[str], None]) -> ModelArtifact:
    return fetch_local(Path(ref.name))

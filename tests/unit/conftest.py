"""Fixtures shared by unit tests of more than one package."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The converted embedded target, shared by every test session through the cache."""
    from specops.sources.embedded import fetch_embedded

    cache = Path(os.environ.get("SPECOPS_CACHE", REPO_ROOT / ".cache" / "specops"))
    return fetch_embedded(cache, log=lambda line: None).path

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


@pytest.fixture
def proxy_at(monkeypatch):
    """proxy_at(port): every proxy variable of the environment names 127.0.0.1:port, and nothing is exempt."""

    def point(port: int) -> None:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
            monkeypatch.setenv(name.lower(), f"http://127.0.0.1:{port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)

    return point

"""Fixtures of the CLI tests."""
from __future__ import annotations

import pytest

from specops.results.store import ResultsStore


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("SPECOPS_RESULTS_URL", f"sqlite:///{tmp_path / 'results.db'}")
    with ResultsStore.open() as opened:
        yield opened

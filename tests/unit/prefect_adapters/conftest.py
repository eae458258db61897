"""Fixtures of the Prefect adapter tests."""
from __future__ import annotations

import pytest
from prefect.testing.utilities import prefect_test_harness


@pytest.fixture(scope="module")
def harness():
    """A Prefect API server of the module's own (SQLite in a temporary home) for real flow and task runs."""
    with prefect_test_harness(server_startup_timeout=120):
        yield

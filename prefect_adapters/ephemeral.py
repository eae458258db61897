"""Prefect's settings for running flows in this process, without a Prefect server of the user's: an ephemeral one
is started (the CLI's runs and the benchmarks)."""
from __future__ import annotations

import os


def prefect_defaults() -> None:
    """Settings for running flows without a Prefect server (an ephemeral one is started)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # A fresh PREFECT_HOME migrates its SQLite database first: on 2 busy cores that outlasts
    # the 20 s default and the run dies before it starts.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

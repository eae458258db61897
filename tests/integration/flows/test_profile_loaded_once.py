"""A run loads its profile from disk once: the `specdec` flow's load (prefect_adapters/refusal.py
loaded_or_refused) is handed to every step, and no step loads it again.

A real run of ngram-local, shrunk by overrides, in this process (the flow called under Prefect's test harness,
a server of its own), so that the one loader, specops.profile.loader.load_profile, is counted wherever a module
took it by name.
"""
from __future__ import annotations

import sys
import time

import pytest
from prefect.testing.utilities import prefect_test_harness

from flows.specdec import run_specdec
from specops.profile import loader
from specops.results.model import Status
from tests.integration.faults.support import SHRINK

pytestmark = [pytest.mark.integration, pytest.mark.slow]
OURS = ("specops", "flows", "tasks", "prefect_adapters", "cli")


def test_a_run_loads_its_profile_once(embedded_model, tmp_path, monkeypatch):
    loads: list[tuple] = []
    load_profile = loader.load_profile

    def counted(*args, **kwargs):
        loads.append((*args, *kwargs.values()))
        return load_profile(*args, **kwargs)

    for name, module in list(sys.modules.items()):  # the loader's module and each that imported its function
        if name.split(".")[0] in OURS and vars(module).get("load_profile") is load_profile:
            monkeypatch.setattr(module, "load_profile", counted)
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))  # the cache stays the suite's shared one
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # the harness server: no telemetry heartbeat
    t0 = time.monotonic()
    with prefect_test_harness(server_startup_timeout=180):
        result = run_specdec("ngram-local", SHRINK, "once")
    print(f"one shrunk ngram-local run: {time.monotonic() - t0:.0f}s, {len(loads)} profile load(s)")
    assert result.status is Status.OK, result.reasons
    assert loads == [("ngram-local", SHRINK)]

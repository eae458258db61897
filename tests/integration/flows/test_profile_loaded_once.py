"""Every flow subcommand loads each profile from disk once: the CLI's load, which refuses a bad profile before
Prefect starts, is handed to the flow (prefect_adapters/refusal.py handed_over), which hands it to every step (a
sweep's cells, an upgrade's sides and a calibration's A/A runs apply their overrides to it in memory) and to its
member runs; neither the flow, a step nor a member loads it again. `specops run` and `specops sweep` run whole;
compare-profiles, upgrade-check and calibrate run their flows with stand-in member runs (each a flow whose first act
is specdec's: loaded_or_refused), a whole run of each being the member's own test.

A real run of ngram-local, shrunk by overrides, through the CLI's own entry point in this process (its flow under
Prefect's test harness, a server of its own), so that the one loader, specops.profile.loader.load_profile, is
counted wherever a module took it by name, the CLI's modules included.
"""
from __future__ import annotations

import signal
import sys
import time

import pytest
from prefect.testing.utilities import prefect_test_harness

from cli.main import main
from specops.profile import loader
from specops.results.model import Status
from specops.run.rundir import read_status
from specops.sweep.cells import CellStore
from specops.sweep.grid import cell_key
from tests.integration.support import SHARED_CACHE

pytestmark = [pytest.mark.integration, pytest.mark.slow]
OURS = ("specops", "flows", "tasks", "prefect_adapters", "cli")
# The smallest run that still takes every step (both servers, the lossless check, one interleaved AIPerf round):
# what is counted is loads, not what they measure.
SHRINK = ["benchmark.num_requests=2", "benchmark.output_tokens=8", "comparison.lossless_prompts=1",
          "comparison.lossless_max_tokens=8"]


def test_a_run_and_a_sweep_load_their_profile_once(embedded_model, tmp_path, monkeypatch):
    loads: list[tuple] = []
    load_profile = loader.load_profile

    def counted(*args, **kwargs):
        loads.append((*args, *kwargs.values()))
        return load_profile(*args, **kwargs)

    for name, module in list(sys.modules.items()):  # the loader's module and each that imported its function
        if name.split(".")[0] in OURS and vars(module).get("load_profile") is load_profile:
            monkeypatch.setattr(module, "load_profile", counted)
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))  # the cache stays the suite's shared one
    # but for the sweep's cell, which an earlier session's would answer: this sweep measures it
    CellStore(SHARED_CACHE / "sweeps").path(cell_key(load_profile("ngram-local", SHRINK).sha256, SHRINK, 1, 1)
                                            ).unlink(missing_ok=True)
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # the harness server: no telemetry heartbeat
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")  # what `specops run` would set
    sigterm = signal.getsignal(signal.SIGTERM)  # `specops run` turns SIGTERM into an interrupt
    t0 = time.monotonic()
    try:
        with prefect_test_harness(server_startup_timeout=180):  # the CLI uses the API it finds configured
            # --debug: the console keeps its tracebacks (the CLI would drop them from this process's logging)
            code = main(["--debug", "run", "ngram-local", *[a for o in SHRINK for a in ("--set", o)],
                         "--run-id", "once"])
            ran, loads[:] = list(loads), []
            print(f"one shrunk ngram-local run: {time.monotonic() - t0:.0f}s, {len(ran)} profile load(s)")
            swept = main(["--debug", "sweep", "ngram-local", "--k", "1", "--concurrency", "1",
                          *[a for o in SHRINK for a in ("--set", o)], "--run-id", "sweep-once"])
    finally:
        signal.signal(signal.SIGTERM, sigterm)
    print(f"and a sweep of one cell: {time.monotonic() - t0:.0f}s in all, {len(loads)} profile load(s)")
    status = read_status(tmp_path / "artifacts" / "ngram-local" / "once")
    assert code == 0 and status["state"] == Status.OK, status
    assert ran == [("ngram-local", SHRINK)]
    sweep_status = read_status(tmp_path / "artifacts" / "ngram-local" / "sweep-once")
    assert swept == 0 and sweep_status["state"] == Status.OK, sweep_status
    assert loads == [("ngram-local", SHRINK)]
    assert members_load_nothing_again(monkeypatch, loads) == []


def members_load_nothing_again(monkeypatch, loads: list[tuple]) -> list[tuple]:
    """compare-profiles, upgrade-check and calibrate through the CLI (the harness's server still up), each member
    run a stand-in; what was loaded beyond one load per profile (empty: nothing)."""
    from prefect import flow

    import flows.calibrate as calibrating
    import flows.compare as comparing
    import flows.upgrade as upgrading
    from prefect_adapters.refusal import loaded_or_refused
    from specops.upgrade.defaults import CPU_REFERENCE
    from tests.results_factory import run_result

    @flow
    def member(profile: str, overrides: list[str]):
        return loaded_or_refused(profile, overrides)

    def run(profile, overrides, role=None):
        member(profile, overrides)
        return run_result(profile=profile)

    for module in (comparing, upgrading, calibrating):
        monkeypatch.setattr(module, "run_specdec", run)
    monkeypatch.setattr(comparing, "publish_comparison", lambda results, run_id: "table")
    monkeypatch.setattr(upgrading, "publish_upgrade", lambda profile, sides, results, run_id: "table")
    monkeypatch.setattr(calibrating, "publish_calibration", lambda calibration, run_id: "table")
    sets = [a for o in SHRINK for a in ("--set", o)]
    extra = []
    for argv, once in ((["compare-profiles", "ngram-vllm-serve-cpu", "suffix-vllm-serve-cpu"],
                        [("ngram-vllm-serve-cpu", SHRINK), ("suffix-vllm-serve-cpu", SHRINK)]),
                       (["upgrade-check", "ngram-vllm-serve-cpu", "--before", CPU_REFERENCE],
                        [("ngram-vllm-serve-cpu", SHRINK)]),
                       (["calibrate", "ngram-local", "--runs", "2", "--ab", "2"], [("ngram-local", SHRINK)])):
        loads[:] = []
        assert main(["--debug", *argv, *sets]) == 0, argv
        print(f"{argv[0]}: {len(loads)} profile load(s)")
        extra += [(argv[0], *load) for load in loads if load not in once] + \
                 [(argv[0], "loaded twice", *load) for load in once if loads.count(load) != 1]
    return extra

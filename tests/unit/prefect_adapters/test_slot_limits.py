"""A run holds its host lock for as long as it holds its slots, a CPU run too (it takes no Prefect slot, so
the host lock is all that orders it against the host's other runs)."""
from __future__ import annotations

from prefect.logging import disable_run_logger

from prefect_adapters.slot_limits import hold_slots
from specops.cost.slots import run_slots
from specops.host.host_lock import LOCK_DIR_ENV, holder_of


def test_a_cpu_run_holds_its_host_lock_while_it_runs_and_releases_it_after(tmp_path, monkeypatch):
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))
    (tmp_path / "locks").mkdir()
    slots = run_slots(None, "none", hostname="h")  # a CPU profile that does not ask for exclusive serving
    assert slots.limits == []  # no Prefect slot: only the host lock orders it
    with disable_run_logger(), hold_slots(slots, "ngram-local run r1") as held:
        assert holder_of("cpu:h").startswith("ngram-local run r1 (pid ")
        assert held.names == ["cpu:h"]
    assert holder_of("cpu:h") == "unknown"


def test_a_run_that_took_its_slots_no_longer_says_it_waits(tmp_path, monkeypatch):
    """Issue 51: a sweep's directory said `waiting for cpu:h` for its whole measurement (its cells announce their
    steps in their own directories)."""
    from specops.run.rundir import RunDir

    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))
    (tmp_path / "locks").mkdir()
    run = RunDir(tmp_path / "sweep")
    run.path.mkdir()
    run.mark_started()
    with disable_run_logger(), hold_slots(run_slots(None, "none", hostname="h"), "a sweep", run):
        status = run.status()
        assert (status["state"], status["step"], status["variant"]) == ("running", "holding", "cpu:h")

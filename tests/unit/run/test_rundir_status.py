"""status.json follows the run: running with the current step, then the verdict."""
from __future__ import annotations

import pytest

from specops.run.rundir import RunDir, read_status


def test_status_follows_the_steps_and_keeps_the_failing_one(tmp_path):
    run = RunDir(tmp_path)
    assert read_status(tmp_path) == {}
    run.mark_started()
    assert read_status(tmp_path)["state"] == "running" and read_status(tmp_path)["step"] is None
    with run.timed("serve", "base"):
        now = read_status(tmp_path)
        assert (now["state"], now["step"], now["variant"]) == ("running", "serve", "base")
    with pytest.raises(RuntimeError), run.timed("benchmark", "speculative"):
        raise RuntimeError("boom")
    assert run.progress.failed_at == ("benchmark", "speculative")
    run.set_status("failed", *run.progress.failed_at, error="RuntimeError: boom")
    final = run.status()
    assert (final["state"], final["step"], final["variant"], final["error"]) == (
        "failed", "benchmark", "speculative", "RuntimeError: boom")
    assert final["updated_at"] >= final["started_at"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".status")] == []  # no temp file left


def test_a_retried_step_that_succeeds_takes_the_failure_back_and_teardown_keeps_it(tmp_path):
    run = RunDir(tmp_path)
    run.mark_started()
    with pytest.raises(OSError), run.timed("download", "target"):
        raise OSError("network")
    assert run.status()["state"] == "failed"
    with run.timed("download", "target"):  # Prefect's retry of the task
        pass
    assert run.progress.failed_at is None and run.status()["state"] == "running"
    with pytest.raises(RuntimeError), run.timed("check", "base"):
        raise RuntimeError("server died")
    with run.timed("serve", "base", announce=False):  # stopping the servers afterwards
        pass
    assert (run.status()["state"], run.status()["step"]) == ("failed", "check")


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt(), SystemExit(143)], ids=["ctrl-c", "signal"])
def test_an_interrupt_says_interrupted_at_once_not_failed(tmp_path, interrupt):
    """Before the servers' teardown and the report: a run killed there (a worker's grace ran out) is still one the
    regression rules never judge (issue 51: such runs were recorded FAILED)."""
    run = RunDir(tmp_path)
    run.mark_started()
    with pytest.raises(type(interrupt)), run.timed("serve", "speculative"):
        raise interrupt
    now = run.status()
    assert (now["state"], now["step"], now["variant"]) == ("interrupted", "serve", "speculative")
    assert now["error"].startswith(type(interrupt).__name__)


def _sweep_tree(tmp_path):
    """A sweep's directory as a sweep opens it: itself, a server directory per K, a cell per concurrency."""
    sweep = RunDir(tmp_path / "sweep")
    sweep.path.mkdir()
    sweep.set_status("running", "download")
    server = sweep.child("k2")
    server.set_status("running", "serve", "speculative")
    cell = server.child("c1")
    cell.set_status("ok")
    open_cell = server.child("c2")
    open_cell.set_status("running", "benchmark", "speculative")
    return sweep, server, cell, open_cell


def test_what_a_sweep_left_open_ends_with_it_and_keeps_its_step(tmp_path):
    from specops.run.rundir import end_open_statuses

    sweep, server, cell, open_cell = _sweep_tree(tmp_path)
    assert end_open_statuses(sweep.path, "failed", "the sweep failed at serve: boom") == 3
    assert read_status(cell.path)["state"] == "ok"  # a final status is never rewritten
    for run, step in ((sweep, "download"), (server, "serve"), (open_cell, "benchmark")):
        status = read_status(run.path)
        assert (status["state"], status["step"], status["error"]) == ("failed", step, "the sweep failed at serve: boom")
    assert end_open_statuses(sweep.path, "ok") == 0


def test_an_abandoned_cell_abandons_its_whole_sweep(tmp_path):
    from specops.run.rundir import mark_abandoned

    sweep, server, cell, open_cell = _sweep_tree(tmp_path)
    assert mark_abandoned(server.path, "ended without finishing") is True  # the server record's directory
    assert {read_status(r.path)["state"] for r in (sweep, server, open_cell)} == {"failed"}
    assert read_status(sweep.path)["step"] == "download" and read_status(cell.path)["state"] == "ok"
    assert mark_abandoned(server.path, "again") is False


def test_a_full_disk_never_halves_status_json_nor_hides_the_steps_error(tmp_path):
    from tests.tmpfs import fill, small_disk

    with small_disk(tmp_path / "disk", 64) as disk:
        run = RunDir(disk)
        run.mark_started()
        fill(disk)
        with pytest.raises(RuntimeError, match="^server died"), run.timed("serve", "base"):
            raise RuntimeError("server died: " + "log tail " * 1000)  # longer than status.json's one block
        assert run.progress.failed_at == ("serve", "base")
        status = read_status(disk)  # the old one, whole: "failed" did not fit where the file lies
        assert (status["state"], status["step"]) == ("running", "serve")
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "status.json", "timings.json"]

"""status.json follows the run: running with the current step, then the verdict."""
from __future__ import annotations

import pytest

from specops.rundir import RunDir, read_status


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

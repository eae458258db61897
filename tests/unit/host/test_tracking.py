"""Records of started processes: who owns them (the orchestrator's lookup, this process), and what a
reader sees of a broken record."""
from __future__ import annotations

import subprocess

import psutil
import pytest

from specops.host import tracking


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    yield
    tracking.set_owner_lookup(lambda: None)


def test_a_record_names_its_owner_and_the_process_that_started_it():
    proc = subprocess.Popen(["sleep", "30"])
    try:
        tracking.set_owner_lookup(lambda: "flow-run-7")
        record = tracking.track_process(proc.pid, "bench-tool", "genai-perf")
        me = psutil.Process()
        assert record["owner"] == "flow-run-7" and record["kind"] == "bench-tool"
        assert (record["owner_pid"], record["owner_create_time"]) == (me.pid, me.create_time())
        assert record["create_time"] == psutil.Process(proc.pid).create_time()
        assert [r for _, r in tracking.records()] == [record] and tracking.owner_alive(record)
        tracking.unregister(record)
        assert list(tracking.records()) == []
    finally:
        proc.kill()
        proc.wait()


def test_an_explicit_owner_wins_and_a_failing_lookup_means_none():
    def no_run():
        raise RuntimeError("no flow run context in this thread")

    tracking.set_owner_lookup(no_run)
    assert tracking.current_owner() is None
    path = tracking.register({"pid": 0, "container_id": "abc", "owner": "flow-run-1"})
    assert '"owner": "flow-run-1"' in path.read_text()


def test_an_ended_process_is_not_recorded_and_a_broken_record_is_dropped():
    ended = subprocess.Popen(["true"])
    ended.wait()
    assert tracking.track_process(ended.pid, "bench-tool", "x") == {"pid": ended.pid}
    broken = tracking.live_dir() / "pid-1.json"
    broken.write_text("{not json")
    assert list(tracking.records()) == [] and not broken.exists()

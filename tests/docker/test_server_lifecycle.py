"""Start, readiness, logs, bounded stop, labels and the janitor against a real dockerd."""
from __future__ import annotations

import time
import urllib.request
import uuid

import docker
import pytest

from specops.launch import ContainerExited, ContainerSpec, ImageMissing, NotReady, run_labels
from tests.docker.support import startable_ulimits, wait_for_output

pytestmark = pytest.mark.integration


def _spec(image: str, script: str, run_id: str | None = None, **kw) -> ContainerSpec:
    return ContainerSpec(image=image, command=["sh", "-c", script],
                         labels=run_labels(run_id or uuid.uuid4().hex[:8], "test-profile", "server"),
                         ulimits=startable_ulimits(), **kw)


def _gone(client, container_id: str) -> bool:
    try:
        client.containers.get(container_id)
    except docker.errors.NotFound:
        return True
    return False


def test_start_ready_logs_stop(dockerd, launcher, test_image, free_port, tmp_path):
    script = f"echo marker-started; sleep 1; exec httpd -f -p 127.0.0.1:{free_port} -h /www"
    log_path = tmp_path / "logs" / "server.log"
    handle = launcher.start(_spec(test_image, script), log_path)
    try:
        def probe() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{free_port}/health", timeout=2) as r:
                return r.read() == b"ok\n"

        took = launcher.wait_ready(handle, probe, deadline_s=30, poll_s=0.2)
        assert took < 30
        assert probe()
    finally:
        launcher.stop(handle, timeout_s=1)  # httpd as pid 1 ignores SIGTERM: this is the SIGKILL path
    assert _gone(dockerd, handle.id)
    assert "marker-started" in log_path.read_text()
    launcher.stop(handle, timeout_s=5)  # idempotent


def test_labels_on_container(dockerd, launcher, test_image, tmp_path):
    handle = launcher.start(_spec(test_image, "sleep 1000", run_id="run-labels"), tmp_path / "l.log")
    try:
        labels = dockerd.containers.get(handle.id).labels
        assert labels["specops.managed"] == "true"
        assert labels["specops.run"] == "run-labels"
        assert labels["specops.profile"] == "test-profile"
        assert labels["specops.role"] == "server"
    finally:
        launcher.stop(handle, timeout_s=0)


def test_wait_ready_fails_early_when_container_exits(launcher, test_image, tmp_path):
    handle = launcher.start(_spec(test_image, "echo marker-boom; exit 3"), tmp_path / "x.log")
    try:
        start = time.monotonic()
        with pytest.raises(ContainerExited) as err:
            launcher.wait_ready(handle, lambda: False, deadline_s=60, poll_s=0.2)
        assert time.monotonic() - start < 15
        assert "code 3" in str(err.value) and "marker-boom" in str(err.value)
        assert "marker-boom" in (tmp_path / "x.log").read_text()
    finally:
        launcher.stop(handle, timeout_s=0)


def test_wait_ready_deadline(dockerd, launcher, test_image, tmp_path):
    handle = launcher.start(_spec(test_image, "echo marker-slow; sleep 1000"), tmp_path / "s.log")
    try:
        wait_for_output(dockerd, handle.id, "marker-slow")  # in the log the 1 s deadline's message quotes
        with pytest.raises(NotReady, match="marker-slow"):
            launcher.wait_ready(handle, lambda: False, deadline_s=1, poll_s=0.2)
    finally:
        launcher.stop(handle, timeout_s=0)


def test_stop_is_bounded_when_sigterm_is_ignored(dockerd, launcher, test_image, tmp_path):
    script = "trap '' TERM; echo marker-stubborn; sleep 1000"
    handle = launcher.start(_spec(test_image, script), tmp_path / "stubborn.log")
    wait_for_output(dockerd, handle.id, "marker-stubborn")  # printed after the trap is installed
    start = time.monotonic()
    launcher.stop(handle, timeout_s=2)
    took = time.monotonic() - start
    assert 1.5 <= took < 2 + 8, took
    assert _gone(dockerd, handle.id)
    assert "marker-stubborn" in (tmp_path / "stubborn.log").read_text()


def test_janitor_removes_what_a_killed_run_left(dockerd, launcher, test_image, tmp_path):
    left = launcher.start(_spec(test_image, "echo marker-left; sleep 1000", run_id="killed-run"), tmp_path / "a.log")
    other = launcher.start(_spec(test_image, "sleep 1000", run_id="live-run"), tmp_path / "b.log")
    left_id = left.id
    del left  # the run died: no handle, no teardown
    wait_for_output(dockerd, left_id, "marker-left")  # what the janitor must save
    try:
        assert launcher.janitor({"specops.run": "killed-run"}, log_dir=tmp_path / "janitor", timeout_s=0) == 1
        assert _gone(dockerd, left_id)
        assert not _gone(dockerd, other.id)
        saved = list((tmp_path / "janitor").glob("*.log"))
        assert len(saved) == 1 and "marker-left" in saved[0].read_text()
        assert launcher.janitor({"specops.run": "killed-run"}) == 0
    finally:
        launcher.stop(other, timeout_s=0)


def test_janitor_leaves_unmanaged_containers(dockerd, launcher, test_image):
    foreign = dockerd.containers.create(test_image, ["sleep", "1000"], labels={"specops.run": "x"})
    try:
        assert launcher.janitor() == 0
        assert not _gone(dockerd, foreign.id)
    finally:
        foreign.remove(force=True)


def test_missing_image_says_docker_pull(launcher, dockerd, tmp_path):
    with pytest.raises(ImageMissing, match=r"docker pull specops-test/absent:0"):
        launcher.start(ContainerSpec(image="specops-test/absent:0", command=["true"]), tmp_path / "m.log")
    assert not dockerd.containers.list(all=True, filters={"ancestor": "specops-test/absent:0"})


def test_flow_janitor_reaps_a_recorded_container(dockerd, launcher, test_image, tmp_path, monkeypatch):
    """The records the pipeline keeps for the Prefect hooks cover containers too (by id)."""
    from specops.pipeline import janitor

    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    handle = launcher.start(_spec(test_image, "echo marker-recorded; sleep 1000", run_id="flow-run"),
                            tmp_path / "server.log")
    wait_for_output(dockerd, handle.id, "marker-recorded")  # what the reap must save
    janitor.register({"pid": 0, "tool": "docker", **handle.record(), "owner": "flow-run-1", "what": "test"})
    assert janitor.reap(owner="someone-else", timeout_s=0) == 0 and not _gone(dockerd, handle.id)
    assert janitor.reap(owner="flow-run-1", timeout_s=0) == 1
    assert _gone(dockerd, handle.id)
    assert "marker-recorded" in (tmp_path / "server.log").read_text()
    assert list(janitor.live_dir().glob("*.json")) == []


def test_janitor_stops_a_dead_runs_container_and_keeps_a_live_runs(dockerd, launcher, test_image, tmp_path,
                                                                    monkeypatch):
    """`specops janitor` without an owner: containers whose specops process is gone, not a live run's."""
    import subprocess

    from specops.pipeline import janitor

    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    dead, live = (launcher.start(_spec(test_image, "sleep 1000", run_id=name), tmp_path / f"{name}.log")
                  for name in ("dead-run", "live-run"))
    ended = subprocess.Popen(["true"])
    ended.wait()
    janitor.register({"pid": 0, **dead.record(), "owner_pid": ended.pid, "owner_create_time": 0.0, "what": "dead"})
    janitor.register({"pid": 0, **live.record(), "what": "live"})  # owned by this (live) process
    try:
        assert janitor.sweep(timeout_s=0) == {"server": 1}
        assert _gone(dockerd, dead.id) and not _gone(dockerd, live.id) and sum(janitor.live_records().values()) == 1
    finally:
        assert janitor.sweep(everything=True, timeout_s=0) == {"server": 1}
    assert _gone(dockerd, live.id)

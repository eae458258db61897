"""HF_TOKEN reaches the container's environment and nothing else the launcher writes or shows."""
from __future__ import annotations

import logging

import pytest

from specops.launch import ContainerSpec, describe_line, run_labels
from tests.docker.support import startable_ulimits, wait_for_output

pytestmark = pytest.mark.integration

TOKEN = "hf_marker_SECRET_0123456789abcdef"


def test_secret_only_in_container_env(dockerd, launcher, test_image, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    caplog.set_level(logging.DEBUG)
    # the container prints the token itself, as a careless tool might
    script = 'echo "token-length=${#HF_TOKEN}"; echo "HF_TOKEN=$HF_TOKEN"; sleep 1000'
    spec = ContainerSpec(image=test_image, command=["sh", "-c", script], secret_env=("HF_TOKEN",),
                         env={"HF_HUB_OFFLINE": "1"}, labels=run_labels("run-secret", "p", "server"), ulimits=startable_ulimits())
    log_path = tmp_path / "server.log"
    handle = launcher.start(spec, log_path)
    try:
        wait_for_output(dockerd, handle.id, "HF_TOKEN=")  # both lines printed before the stop saves the log
        attrs = dockerd.containers.get(handle.id).attrs
        assert f"HF_TOKEN={TOKEN}" in attrs["Config"]["Env"]
        assert "HF_HUB_OFFLINE=1" in attrs["Config"]["Env"]
        assert TOKEN not in repr(attrs["Config"]["Labels"])
        assert TOKEN not in repr(handle) and TOKEN not in repr(handle.record())
    finally:
        launcher.stop(handle, timeout_s=0)
    saved = log_path.read_text()
    assert f"token-length={len(TOKEN)}" in saved  # it was there
    assert TOKEN not in saved and "HF_TOKEN=***" in saved
    assert TOKEN not in describe_line(spec) and "-e HF_TOKEN " in describe_line(spec)
    assert caplog.records and not any(TOKEN in r.getMessage() for r in caplog.records)


def test_secret_masked_in_failure_message(launcher, test_image, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    spec = ContainerSpec(image=test_image, command=["sh", "-c", 'echo "bad token $HF_TOKEN"; exit 1'],
                         secret_env=("HF_TOKEN",), ulimits=startable_ulimits())
    with pytest.raises(Exception) as err:
        launcher.run(spec, tmp_path / "f.log", timeout_s=30)
    assert "bad token ***" in str(err.value) and TOKEN not in str(err.value)
    assert TOKEN not in (tmp_path / "f.log").read_text()


def test_unset_secret_is_not_passed(dockerd, launcher, test_image, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    spec = ContainerSpec(image=test_image, command=["true"], secret_env=("HF_TOKEN",))
    handle = launcher.create(spec, tmp_path / "u.log")
    try:
        env = dockerd.containers.get(handle.id).attrs["Config"]["Env"]
        assert not any(e.startswith("HF_TOKEN") for e in env)
    finally:
        launcher.stop(handle, timeout_s=0)

"""ContainerSpec validation and labels; the launcher's view of it without a daemon."""
from __future__ import annotations

import pytest

from specops.launch import ContainerSpec, DockerLauncher, DockerUnavailable, Mount, run_labels
from specops.launch.docker_launcher import create_kwargs, device_requests


def test_every_container_is_labelled_managed():
    spec = ContainerSpec(image="i", labels=run_labels("r1", "eagle3-trtllm", "server"))
    assert spec.all_labels() == {"specops.managed": "true", "specops.run": "r1",
                                 "specops.profile": "eagle3-trtllm", "specops.role": "server"}


@pytest.mark.parametrize("kwargs, match", [
    ({"image": ""}, "needs an image"),
    ({"image": "i", "gpus": 0}, "gpus"),
    ({"image": "i", "gpus": "some"}, "gpus"),
    ({"image": "i", "gpus": True}, "gpus"),
    ({"image": "i", "gpus": []}, "empty device list"),
    ({"image": "i", "env": {"HF_TOKEN": "x"}, "secret_env": ("HF_TOKEN",)}, "both"),
    ({"image": "i", "secret_env": ("BAD-NAME",)}, "invalid environment"),
    ({"image": "i", "labels": {"specops.managed": "false"}}, "set by the launcher"),
])
def test_invalid_specs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ContainerSpec(**kwargs)


def test_mount_target_must_be_absolute(tmp_path):
    with pytest.raises(ValueError, match="absolute"):
        Mount(tmp_path, "models")


def test_device_requests():
    (all_gpus,) = device_requests("all")
    assert all_gpus["Count"] == -1 and all_gpus["Capabilities"] == [["gpu"]]
    assert device_requests(2)[0]["Count"] == 2
    assert device_requests(["0", "2"])[0]["DeviceIDs"] == ["0", "2"]
    assert device_requests(None) == []


def test_secret_value_read_from_environment_at_start(monkeypatch, tmp_path):
    spec = ContainerSpec(image="i", secret_env=("HF_TOKEN",), env={"A": "1"})
    monkeypatch.setenv("HF_TOKEN", "hf_abc123")
    assert create_kwargs(spec)["environment"] == {"A": "1", "HF_TOKEN": "hf_abc123"}
    monkeypatch.delenv("HF_TOKEN")
    assert create_kwargs(spec)["environment"] == {"A": "1"}
    assert "hf_abc123" not in repr(spec)


def test_missing_mount_source_is_refused(tmp_path):
    spec = ContainerSpec(image="i", mounts=[Mount(tmp_path / "absent", "/models")])
    with pytest.raises(Exception, match="does not exist"):
        create_kwargs(spec)


def test_unreachable_daemon(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    launcher = DockerLauncher()
    (problem,) = launcher.preflight(gpus=True)
    assert "unreachable" in problem and "DOCKER_HOST" in problem and str(tmp_path) in problem
    with pytest.raises(DockerUnavailable, match="dockerd"):
        launcher.janitor()

"""What the engine was asked for: GPU device requests, ulimits, shm, host network, mounts."""
from __future__ import annotations

import pytest

from specops.launch import ContainerSpec, LaunchError, Mount
from tests.docker.support import startable_ulimits

pytestmark = pytest.mark.integration


def _host_config(dockerd, handle) -> dict:
    return dockerd.containers.get(handle.id).attrs["HostConfig"]


@pytest.mark.parametrize("gpus, count, ids", [("all", -1, None), (2, 2, None), (["0", "3"], 0, ["0", "3"])])
def test_gpu_device_request_in_hostconfig(dockerd, launcher, test_image, tmp_path, gpus, count, ids):
    # created, not started: there is no NVIDIA runtime on this machine
    handle = launcher.create(ContainerSpec(image=test_image, command=["true"], gpus=gpus), tmp_path / "g.log")
    try:
        (request,) = _host_config(dockerd, handle)["DeviceRequests"]
        assert request["Capabilities"] == [["gpu"]]
        assert request["Count"] == count
        assert (request["DeviceIDs"] or None) == ids  # docker-py sends [] where the CLI sends null
    finally:
        launcher.stop(handle, timeout_s=0)


def test_no_gpu_no_device_request(dockerd, launcher, test_image, tmp_path):
    handle = launcher.create(ContainerSpec(image=test_image, command=["true"]), tmp_path / "n.log")
    try:
        assert not _host_config(dockerd, handle)["DeviceRequests"]
    finally:
        launcher.stop(handle, timeout_s=0)


def test_gpu_start_without_nvidia_runtime_fails_clearly(dockerd, launcher, test_image, tmp_path):
    before = {c.id for c in dockerd.containers.list(all=True)}
    spec = ContainerSpec(image=test_image, command=["true"], gpus="all", ulimits=startable_ulimits())
    with pytest.raises(LaunchError, match="NVIDIA Container Toolkit"):
        launcher.start(spec, tmp_path / "g.log")
    assert {c.id for c in dockerd.containers.list(all=True)} == before  # nothing left behind


def test_limits_network_and_mounts_in_hostconfig(dockerd, launcher, test_image, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    spec = ContainerSpec(image=test_image, command=["sleep", "1000"], mounts=[Mount(models, "/models", True)],
                         workdir="/models", user="65534")
    handle = launcher.create(spec, tmp_path / "h.log")
    try:
        attrs = dockerd.containers.get(handle.id).attrs
        host = attrs["HostConfig"]
        assert host["NetworkMode"] == "host"
        assert host["ShmSize"] == 2 * 1024 ** 3
        assert sorted((u["Name"], u["Soft"], u["Hard"]) for u in host["Ulimits"]) == [
            ("memlock", -1, -1), ("stack", 67108864, 67108864)]
        (mount,) = host["Mounts"]
        assert (mount["Source"], mount["Target"], mount["ReadOnly"]) == (str(models), "/models", True)
        assert attrs["Config"]["WorkingDir"] == "/models" and attrs["Config"]["User"] == "65534"
    finally:
        launcher.stop(handle, timeout_s=0)


def test_limits_and_read_only_mount_apply_inside(launcher, test_image, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "weights.txt").write_text("marker-weights\n")
    script = ("ulimit -l; ulimit -s; cat /models/weights.txt; "
              "if touch /models/new 2>/dev/null; then echo writable; else echo read-only; fi")
    spec = ContainerSpec(image=test_image, command=["sh", "-c", script], mounts=[Mount(models, "/models", True)],
                         ulimits=startable_ulimits())
    assert launcher.run(spec, tmp_path / "inside.log", timeout_s=30) == 0
    memlock = startable_ulimits()[0].soft
    lines = (tmp_path / "inside.log").read_text().split()
    assert lines == ["unlimited" if memlock == -1 else str(memlock // 1024), "65536", "marker-weights", "read-only"]
    assert not (models / "new").exists()


def test_triton_ulimits_start_or_fail_clearly(dockerd, launcher, test_image, tmp_path):
    """memlock=-1 needs a dockerd allowed to raise it; where it is not (here), the error says so."""
    before = {c.id for c in dockerd.containers.list(all=True)}
    try:
        assert launcher.run(ContainerSpec(image=test_image, command=["true"]), tmp_path / "u.log", timeout_s=30) == 0
    except LaunchError as err:
        assert "--ulimit memlock=-1" in str(err) and "LimitMEMLOCK=infinity" in str(err)
    assert {c.id for c in dockerd.containers.list(all=True)} == before


def test_preflight(launcher, test_image):
    assert launcher.preflight(images=(test_image,)) == []
    (missing,) = launcher.preflight(images=("specops-test/absent:0",))
    assert "docker pull specops-test/absent:0" in missing
    problems = launcher.preflight(gpus=True)
    assert problems and any("NVIDIA Container Toolkit" in p or "nvidia-ctk" in p for p in problems)

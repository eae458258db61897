"""CPU-seconds of a container from the Docker stats API: a busybox loop burning CPU."""
from __future__ import annotations

import time

import pytest

from specops.cost.container_cpu import ContainerStatsMissing, container_cpu_seconds

pytestmark = pytest.mark.integration

BURN = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo burnt; sleep 30"


def _wait_for_log(container, marker: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while marker not in container.logs().decode(errors="replace"):
        container.reload()
        assert container.status == "running", f"container {container.status}: {container.logs()!r}"
        assert time.monotonic() < deadline, f"no {marker!r} after {timeout_s}s"
        time.sleep(0.2)


def test_container_cpu_grows_while_it_burns(dockerd, test_image):
    container = dockerd.containers.run(test_image, ["sh", "-c", BURN], detach=True, network_mode="none",
                                       labels={"specops.run": "cost-cpu"})
    try:
        before = container_cpu_seconds(container)
        _wait_for_log(container, "burnt")
        after = container_cpu_seconds(container)
        assert after - before >= 0.2, (before, after)
        time.sleep(0.5)
        assert container_cpu_seconds(container) - after < 0.2  # sleeping: (almost) nothing more
    finally:
        container.remove(force=True)


def test_stopped_container_has_no_reading(dockerd, test_image):
    container = dockerd.containers.run(test_image, ["sh", "-c", "sleep 30"], detach=True, network_mode="none",
                                       labels={"specops.run": "cost-cpu"})
    try:
        container.kill()
        container.wait(timeout=30)
        container.reload()
        with pytest.raises(ContainerStatsMissing, match="is it running"):
            container_cpu_seconds(container)
    finally:
        container.remove(force=True)

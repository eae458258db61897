"""One-shot in-container commands (convert_checkpoint, trtllm-build, fill_template) through run()."""
from __future__ import annotations

import time

import pytest

from specops.launch import CommandFailed, CommandTimeout, ContainerSpec, run_labels
from tests.docker.support import startable_ulimits

pytestmark = pytest.mark.integration


def _spec(image: str, script: str) -> ContainerSpec:
    return ContainerSpec(image=image, command=["sh", "-c", script], labels=run_labels("run-cmd", role="build"),
                         ulimits=startable_ulimits())


def _leftovers(dockerd) -> list:
    return dockerd.containers.list(all=True, filters={"label": "specops.run=run-cmd"})


def test_run_returns_zero_and_saves_log(dockerd, launcher, test_image, tmp_path):
    assert launcher.run(_spec(test_image, "echo marker-built"), tmp_path / "build.log", timeout_s=30) == 0
    assert "marker-built" in (tmp_path / "build.log").read_text()
    assert not _leftovers(dockerd)


def test_run_failure_raises_with_tail(dockerd, launcher, test_image, tmp_path):
    script = "for i in $(seq 1 100); do echo line-$i; done; echo marker-error >&2; exit 7"
    with pytest.raises(CommandFailed) as err:
        launcher.run(_spec(test_image, script), tmp_path / "fail.log", timeout_s=30)
    assert err.value.exit_code == 7
    assert "marker-error" in str(err.value) and "line-100" in str(err.value) and "line-1\n" not in str(err.value)
    assert "line-1\n" in (tmp_path / "fail.log").read_text()
    assert not _leftovers(dockerd)


def test_run_without_check_returns_code(launcher, test_image, tmp_path):
    assert launcher.run(_spec(test_image, "exit 7"), tmp_path / "c.log", timeout_s=30, check=False) == 7


def test_run_is_killed_on_timeout(dockerd, launcher, test_image, tmp_path):
    start = time.monotonic()
    with pytest.raises(CommandTimeout, match="marker-hang"):
        launcher.run(_spec(test_image, "trap '' TERM; echo marker-hang; sleep 1000"), tmp_path / "t.log", timeout_s=2)
    assert time.monotonic() - start < 2 + 10
    assert not _leftovers(dockerd)

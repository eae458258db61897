"""A cancelled or crashed flow run's hook removes the containers it started, one-shot build steps
included (nothing records those: they are found by their flow-run label), and no other run's."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from prefect_adapters.reaping import reap_servers
from specops.host import tracking
from specops.launch import LABEL_FLOW_RUN, ContainerSpec, run_labels
from tests.docker.support import startable_ulimits

pytestmark = pytest.mark.integration

RUN_A, RUN_B = "5b0e2a4c-0000-0000-0000-00000000000a", "5b0e2a4c-0000-0000-0000-00000000000b"


def start_as(flow_run: str, launcher, image: str, role: str, log):
    tracking.set_owner_lookup(lambda: flow_run)
    try:
        spec = ContainerSpec(image=image, command=["sleep", "300"], labels=run_labels("r", role=role),
                             ulimits=startable_ulimits())
        return launcher.start(spec, log)
    finally:
        tracking.set_owner_lookup(lambda: None)


def test_the_hooks_remove_the_runs_containers_builds_included(dockerd, launcher, test_image, tmp_path, capsys):
    build = start_as(RUN_A, launcher, test_image, "step-build", tmp_path / "build.log")
    other = start_as(RUN_B, launcher, test_image, "server-base", tmp_path / "other.log")
    try:
        assert dockerd.containers.get(build.id).labels[LABEL_FLOW_RUN] == RUN_A
        reap_servers(SimpleNamespace(name="specdec"), SimpleNamespace(id=RUN_A), SimpleNamespace(name="Crashed"))
        assert f"specdec Crashed: stopped 1 container left by flow run {RUN_A}" in capsys.readouterr().out
        assert [c.id for c in dockerd.containers.list(all=True, filters={"label": f"{LABEL_FLOW_RUN}={RUN_A}"})] == []
        assert dockerd.containers.get(other.id).status == "running"
    finally:
        launcher.stop(other, timeout_s=1)
        launcher.stop(build, timeout_s=1)

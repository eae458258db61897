"""Every container a flow run starts, servers and one-shot build steps alike, is labelled with that
flow run, so its cancel/crash hooks find it even when nothing recorded it."""
from __future__ import annotations

import pytest

from specops.host import tracking
from specops.launch import LABEL_FLOW_RUN, ContainerSpec
from specops.launch.docker_launcher import create_kwargs


@pytest.fixture
def flow_run():
    tracking.set_owner_lookup(lambda: "5b0e2a4c-1111-2222-3333-444455556666")
    yield "5b0e2a4c-1111-2222-3333-444455556666"
    tracking.set_owner_lookup(lambda: None)


@pytest.mark.parametrize("role", ["server-speculative", "step-build", "step-render"])
def test_containers_started_in_a_flow_run_carry_its_id(flow_run, role):
    spec = ContainerSpec(image="nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3", command=["trtllm-build"],
                         labels={"specops.role": role})
    assert create_kwargs(spec)["labels"][LABEL_FLOW_RUN] == flow_run


def test_outside_a_flow_run_there_is_no_flow_run_label():
    assert LABEL_FLOW_RUN not in ContainerSpec(image="i").all_labels()

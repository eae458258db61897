"""Where a Docker launch looked, and whether the daemon is this host's, from DOCKER_HOST."""
from __future__ import annotations

import pytest

from specops.launch.preflight import _local_daemon, daemon_hint


@pytest.mark.parametrize("value", [None, ""])
def test_unset_docker_host_is_the_default_socket(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("DOCKER_HOST", raising=False)
    else:
        monkeypatch.setenv("DOCKER_HOST", value)
    assert daemon_hint().startswith("Looked at unix:///var/run/docker.sock (DOCKER_HOST unset).")
    assert _local_daemon()


def test_a_set_docker_host_is_named_and_a_tcp_one_is_not_local(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "tcp://gpu-host:2376")
    assert daemon_hint().startswith("Looked at tcp://gpu-host:2376. ")
    assert not _local_daemon()

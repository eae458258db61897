"""Helpers for the Docker tests."""
from __future__ import annotations

import resource
import time

from specops.launch import Ulimit


def startable_ulimits() -> tuple[Ulimit, ...]:
    """The Triton ulimits, with memlock capped at this host's hard limit.

    Here root lacks CAP_SYS_RESOURCE and the memlock hard limit is 8 MiB, so runc cannot apply
    `memlock=-1` ("error setting rlimit type 8: operation not permitted"); GPU hosts can.
    """
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    memlock = Ulimit("memlock", -1, -1) if hard == resource.RLIM_INFINITY else Ulimit("memlock", hard, hard)
    return (memlock, Ulimit("stack", 67108864, 67108864))


def wait_for_output(client, container_id: str, marker: str, timeout_s: float = 120.0) -> None:
    """Until the container has printed `marker` (its docker logs show it).

    Docker returns from starting a container once its process runs, not once it has printed
    anything: a test that stops the container and then expects a line in the saved log waits
    for the line first, however slowly this host gets round to running the container. The
    timeout is a bound on a hang, not a timed assertion.
    """
    deadline = time.monotonic() + timeout_s
    while marker not in client.containers.get(container_id).logs().decode(errors="replace"):
        assert time.monotonic() < deadline, f"container {container_id[:12]} printed no {marker!r} in {timeout_s:.0f}s"
        time.sleep(0.05)

"""Helpers for the Docker tests."""
from __future__ import annotations

import resource

from specops.launch import Ulimit


def startable_ulimits() -> tuple[Ulimit, ...]:
    """The Triton ulimits, with memlock capped at this host's hard limit.

    Here root lacks CAP_SYS_RESOURCE and the memlock hard limit is 8 MiB, so runc cannot apply
    `memlock=-1` ("error setting rlimit type 8: operation not permitted"); GPU hosts can.
    """
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    memlock = Ulimit("memlock", -1, -1) if hard == resource.RLIM_INFINITY else Ulimit("memlock", hard, hard)
    return (memlock, Ulimit("stack", 67108864, 67108864))

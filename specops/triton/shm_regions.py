"""tritonserver's Python-backend shared memory regions in /dev/shm, named `specops<owner pid>_<token>_`: a stopped
server's go with it, a dead owner's (a SIGKILLed run's) with the next server start or `specops janitor`."""
from __future__ import annotations

import logging
import os
import re
from pathlib import Path

log = logging.getLogger(__name__)

_SHM_DIR = Path("/dev/shm")


def remove_regions(prefix: str) -> None:
    """Drop Python-backend shm regions a killed server left behind (its unique prefix only)."""
    for region in _SHM_DIR.glob(f"{prefix}*"):
        log.info("removing leftover shared memory region %s", region)
        region.unlink(missing_ok=True)


def sweep_stale_shm_regions() -> list[Path]:
    """Remove shm regions of servers whose owning specops process is dead (SIGKILLed runs); those removed.
    The next server start does it, and `specops janitor`."""
    removed = []
    for region in _SHM_DIR.glob("specops*_*"):
        match = re.match(r"specops(\d+)_", region.name)
        if match and not _pid_alive(int(match[1])):
            log.info("removing stale shared memory region %s (owner pid %s is gone)", region, match[1])
            region.unlink(missing_ok=True)
            removed.append(region)
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

"""Which accelerator slots a run holds from its first server start to its last stop: one benchmark per GPU.

Each GPU is a slot of its own, named after the host and the board (`gpu:<host>:<NVML UUID>`), so a
run on "all" and a run on "0" of one host exclude each other while runs on GPU 0 and GPU 1 do not,
and a name stays with its board whatever CUDA_VISIBLE_DEVICES says. The orchestrator holds every
slot of a run at once (prefect_adapters/slot_limits.py: Prefect global concurrency limits of 1).

A CPU backend holds no Prefect slot unless its profile says `serving.exclusive: true` (then
`cpu:<host>`): the CPU profiles are mostly run by `specops run`, whose private Prefect API server no
other run shares, so a slot there would order nothing. What orders every run of a host, whoever
starts it, is the host lock (specops/host/host_lock.py): a run holds a file lock per slot, and a CPU run
`cpu:<host>`. `exclusive: false` holds neither: the run shares its devices (e.g. a host split into
MIG instances you manage yourself).
"""
from __future__ import annotations

import re
import socket
from collections.abc import Callable
from dataclasses import dataclass

from specops.cost import nvml
from specops.fields import parse_gpus

# Prefect refuses these in a limit's name (prefect/types/names.py, BANNED_CHARACTERS).
_BANNED = re.compile(r"[/%&<>]")


def _clean(part: str) -> str:
    return _BANNED.sub("-", part.strip())


def _nvml_uuids() -> dict[int, str] | None:
    return nvml.gpu_uuids() if nvml.nvml_available() is None else None


def _devices(request: str | int | list[str], uuids: dict[int, str] | None) -> list[str]:
    """The boards a GPU request names: UUIDs where NVML answers. Without NVML an index cannot be
    told from a board (nor "all" from "0"), so every GPU request holds the one host-wide slot."""
    if not uuids:
        return ["all"]
    if request == "all":
        return sorted(uuids.values())
    ids = [str(i) for i in range(request)] if isinstance(request, int) else list(request)
    return sorted({uuids.get(int(d), d) if d.isdigit() else d for d in ids})


def slot_names(exclusive: bool | None, gpus: str, hostname: str | None = None,
               uuids: Callable[[], dict[int, str] | None] = _nvml_uuids) -> list[str]:
    """The slots of a run whose servers use `gpus` (a backend's `gpus()`: "none", "all", a count,
    ids, docker's "device=0,2"); `exclusive` is the profile's `serving.exclusive`."""
    if exclusive is False:
        return []
    host = _clean(hostname or socket.gethostname())
    value = (gpus or "none").strip().strip('"')
    if value.startswith("device="):  # docker's form: ids only, even a single one ("device=3" is GPU 3)
        request: str | int | list[str] | None = [d.strip() for d in value[len("device="):].split(",") if d.strip()]
    else:
        request = parse_gpus(value)  # a lone number is a count, as docker's --gpus reads it
    if request is None or request == []:
        return [f"cpu:{host}"] if exclusive else []
    return [f"gpu:{host}:{_clean(d)}" for d in _devices(request, uuids())]


@dataclass(frozen=True)
class RunSlots:
    """What a run holds from its first server start to its last stop."""

    limits: list[str]  # Prefect global concurrency limits: queue a deployment's runs in the UI
    locks: list[str]  # host locks: order every run of this host, CLI or worker


def run_slots(exclusive: bool | None, gpus: str, hostname: str | None = None,
              uuids: Callable[[], dict[int, str] | None] = _nvml_uuids) -> RunSlots:
    """The Prefect slots of slot_names, and a host lock for each (`cpu:<host>` for a CPU run)."""
    limits = slot_names(exclusive, gpus, hostname, uuids)
    if exclusive is False:
        return RunSlots([], [])
    return RunSlots(limits, limits or [f"cpu:{_clean(hostname or socket.gethostname())}"])

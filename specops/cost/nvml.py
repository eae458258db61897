"""GPU energy and GPU inventory through NVML (`import pynvml`, from nvidia-ml-py); the host a run measured on.

Energy is `nvmlDeviceGetTotalEnergyConsumption`: millijoules a device consumed since the driver
was last loaded (Volta and newer). It is the whole device's energy, idle power and other
tenants' work included, not a per-process figure: give the server its GPUs to itself.
Every NVML call here sits between nvmlInit and nvmlShutdown (NVML counts nested inits).

Provenance: `nvmlDeviceGetName`, `nvmlSystemGetDriverVersion`, `nvmlSystemGetCudaDriverVersion_v2`
(the CUDA version the driver supports, 12040 -> 12.4) and `nvmlDeviceGetCudaComputeCapability`
(major, minor: 9.0 Hopper, 8.9 Ada, 8.0/8.6 Ampere), as nvidia-ml-py 13.615 binds them (pynvml.py:
`return (c_major.value, c_minor.value)`); the NVML API reference (docs.nvidia.com/deploy/nvml-api,
Device Queries). TensorRT engines are built for one GPU model (HF TGI's TensorRT-LLM backend page:
"each engine must be compiled for a given ... GPU architecture"), hence gpu_architecture().
"""
from __future__ import annotations

import os
import platform
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from specops.fields import parse_gpus
from specops.results.model import GpuRecord, HostRecord

CPUINFO = Path("/proc/cpuinfo")
NO_DRIVER = "no NVIDIA driver (libnvidia-ml.so.1 not found)"


class EnergyCounterError(RuntimeError):
    """An energy reading failed (NVML error), or two cannot be compared (other devices, a driver reload)."""


@contextmanager
def _session() -> Iterator[Any]:
    import pynvml

    pynvml.nvmlInit()
    try:
        yield pynvml
    finally:
        pynvml.nvmlShutdown()


def _handles(nvml, indices: list[int] | None = None) -> list[tuple[int, Any]]:
    """(index, handle) of the given devices (None: all), inside a session."""
    wanted = range(nvml.nvmlDeviceGetCount()) if indices is None else indices
    return [(i, nvml.nvmlDeviceGetHandleByIndex(i)) for i in wanted]


def nvml_available() -> str | None:
    """None when NVML answers and sees at least one GPU, else why not (never raises)."""
    try:
        import pynvml
    except ImportError:
        return "nvidia-ml-py is not installed (import pynvml failed)"
    try:
        with _session() as nvml:
            count = nvml.nvmlDeviceGetCount()
    except pynvml.NVMLError_LibraryNotFound:
        return NO_DRIVER
    except pynvml.NVMLError_DriverNotLoaded:
        return "NVIDIA driver not loaded (NVML: Driver Not Loaded)"
    except pynvml.NVMLError as exc:
        return f"NVML unusable: {exc}"
    return None if count else "NVML sees no NVIDIA GPU"


def energy_mj(indices: list[int] | None = None) -> dict[int, int]:
    """Total-energy counters (mJ since driver load) of the given device indices (None: all)."""
    import pynvml

    try:
        with _session() as nvml:
            return {i: int(nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for i, h in _handles(nvml, indices)}
    except pynvml.NVMLError as exc:  # NotSupported before Volta, InvalidArgument for an index out of range, ...
        raise EnergyCounterError(f"NVML total energy of GPU {indices or 'all'}: {type(exc).__name__}: {exc}") from exc


def energy_delta_j(before: Mapping[int, int], after: Mapping[int, int]) -> float:
    """Joules spent between two `energy_mj` readings, summed over the devices."""
    if set(before) != set(after):
        raise EnergyCounterError(f"energy readings of different GPUs: {sorted(before)} then {sorted(after)}")
    backwards = [i for i in sorted(before) if after[i] < before[i]]
    if backwards:
        raise EnergyCounterError(f"the energy counter of GPU {', '.join(map(str, backwards))} went backwards "
                                 "(the NVIDIA driver was reloaded during the window): no energy for it")
    return sum(after[i] - before[i] for i in before) / 1000.0


def gpu_indices(gpus: str | None) -> list[int] | None:
    """Device indices a profile's `gpus` string gives the server: None = all, [] = none.

    Accepts what the container backends pass to the Docker launcher ("all", a count, ids "0,2")
    and docker's own "device=0,2". A count N means devices 0..N-1 (what dockerd's NVIDIA
    integration picks). Unset (None) means all: a server process sees every GPU by default.
    """
    if gpus is None:
        return None
    value = gpus.strip().strip('"')
    if value.startswith("device="):  # docker's form: ids only, even a single one ("device=3" is GPU 3)
        request: Any = [d.strip() for d in value[len("device="):].split(",") if d.strip()]
    else:
        request = parse_gpus(value)
    if request is None or request == []:
        return []
    if request == "all":
        return None
    if isinstance(request, int):
        return list(range(request))
    bad = [d for d in request if not d.isdigit()]
    if bad:
        raise ValueError(f"gpus {gpus!r}: energy is read per device index; cannot map {bad} (UUIDs?) to indices")
    return sorted({int(d) for d in request})


def _cuda_version(raw: int) -> str:
    """NVML's CUDA driver version integer as text: 12040 -> "12.4"."""
    return f"{raw // 1000}.{raw % 1000 // 10}"


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value  # older bindings return bytes


def gpu_host_info() -> tuple[list[dict[str, Any]], str, str]:
    """GpuRecord fields of every device, the driver version and the CUDA version it supports."""
    with _session() as nvml:
        gpus = []
        for i, handle in _handles(nvml):
            memory = nvml.nvmlDeviceGetMemoryInfo(handle).total
            gpus.append({"index": i, "name": _text(nvml.nvmlDeviceGetName(handle)),
                         "memory_gb": round(memory / 2**30, 1), "compute_capability": _capability(nvml, handle)})
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        cuda = _cuda_version(nvml.nvmlSystemGetCudaDriverVersion_v2())
    return gpus, driver, cuda


def _capability(nvml, handle) -> str:
    """`nvmlDeviceGetCudaComputeCapability` (major, minor) as "9.0" (H100), "8.9" (L4), "8.0" (A100)."""
    major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
    return f"{major}.{minor}"


def gpu_architecture(indices: list[int] | None) -> list[dict[str, str]] | str:
    """Model and compute capability of each device a server uses (None: all), for cache keys of
    what only runs where it was built (TensorRT engines); else why NVML cannot tell."""
    if indices == []:
        return []
    reason = nvml_available()
    if reason is not None:
        return f"unknown: {reason}"
    with _session() as nvml:
        return [{"name": _text(nvml.nvmlDeviceGetName(h)), "compute_capability": _capability(nvml, h)}
                for _, h in _handles(nvml, indices)]


def energy_source(indices: list[int] | None) -> tuple[bool, str]:
    """Whether energy can be read for these devices, and a source text (or the reason it cannot)."""
    if indices == []:
        return False, "the server has no GPU"
    reason = nvml_available()
    if reason is not None:
        return False, reason
    try:
        devices = sorted(energy_mj(indices))
    except EnergyCounterError as exc:
        return False, f"NVML total energy unreadable: {exc}"
    return True, f"NVML total energy, GPU {','.join(map(str, devices))}"


def gpu_uuids() -> dict[int, str]:
    """Each device's UUID by index ("GPU-6f1b..."): a name that stays with the board across
    reboots and CUDA_VISIBLE_DEVICES, where indices do not."""
    with _session() as nvml:
        return {i: _text(nvml.nvmlDeviceGetUUID(h)) for i, h in _handles(nvml)}


def cpu_model(cpuinfo: Path = CPUINFO) -> str:
    """The first "model name" of /proc/cpuinfo; else platform.processor(), else the machine type."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def host_record() -> HostRecord:
    """The host a run measured on: CPU, memory, and NVIDIA GPUs when NVML sees any."""
    gpus: list[GpuRecord] = []
    driver = cuda = None
    if nvml_available() is None:
        infos, driver, cuda = gpu_host_info()
        gpus = [GpuRecord(**info) for info in infos]
    return HostRecord(hostname=socket.gethostname(), platform=platform.platform(), python=platform.python_version(),
                      cpu_model=cpu_model(), cores=psutil.cpu_count(logical=True) or os.cpu_count() or 1,
                      memory_gb=round(psutil.virtual_memory().total / 2**30, 1), gpus=gpus, driver=driver, cuda=cuda)

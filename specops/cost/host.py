"""The host a run measured on, as a HostRecord: CPU, memory, and NVIDIA GPUs when NVML sees any."""
from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

import psutil

from specops.cost import nvml
from specops.results.model import GpuRecord, HostRecord

CPUINFO = Path("/proc/cpuinfo")


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
    gpus: list[GpuRecord] = []
    driver = cuda = None
    if nvml.nvml_available() is None:
        infos, driver, cuda = nvml.gpu_host_info()
        gpus = [GpuRecord(**info) for info in infos]
    return HostRecord(hostname=socket.gethostname(), platform=platform.platform(), python=platform.python_version(),
                      cpu_model=cpu_model(), cores=psutil.cpu_count(logical=True) or os.cpu_count() or 1,
                      memory_gb=round(psutil.virtual_memory().total / 2**30, 1), gpus=gpus, driver=driver, cuda=cuda)

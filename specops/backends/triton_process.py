"""A tritonserver from nvidia-pytriton run as a process on this host, as a backend's Server.

The embedded runtime (backend local) and Triton's vllm_backend on the vLLM CPU engine (backend vllm,
launch: process) both serve through it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from specops.backends.triton_server import TritonServer
from specops.cost.meter import process_tree_cpu_seconds
from specops.host.processes import teardown_quietly
from specops.triton import client


@dataclass
class TritonProcessServer:
    triton: TritonServer
    log_path: Path
    pid: int
    create_time: float  # with pid, identifies the process even after the pid is recycled
    server_version: str

    @property
    def endpoint(self):
        return self.triton.endpoint

    def stop(self, timeout_s: float) -> None:
        self.triton.stop(timeout_s)

    def describe(self) -> str:
        return f"tritonserver pid {self.pid}"

    def state(self) -> str | None:
        return self.triton.state()

    def answers(self, timeout_s: float) -> bool:
        return client.is_ready(self.endpoint, self.triton.models, timeout_s=timeout_s)

    def log_tail(self, lines: int = 20) -> str:
        return self.triton.log_tail(lines)

    def cpu_seconds(self) -> float:
        return process_tree_cpu_seconds(self.pid, self.create_time)

    def version(self) -> tuple[str, str]:
        return "tritonserver", self.server_version

    def record(self) -> dict[str, Any]:
        e = self.endpoint
        return {"pid": self.pid, "create_time": self.create_time, "ports": [e.http_port, e.grpc_port, e.metrics_port],
                "tool": "tritonserver", "version": self.server_version}


def start_triton(triton: TritonServer, ready_timeout_s: float, stop_timeout_s: float) -> TritonProcessServer:
    """Start `triton`, wait until it and its models are ready (stopping it on any failure), and wrap it."""
    triton.start()
    try:
        triton.wait_ready(ready_timeout_s)
    except BaseException:
        teardown_quietly(lambda: triton.stop(stop_timeout_s), "stopping tritonserver")
        raise
    proc = psutil.Process(triton.pid)  # after readiness: a port clash relaunches the process
    return TritonProcessServer(triton, triton.log_file, proc.pid, proc.create_time(),
                               client.server_version(triton.endpoint))

"""Where a running Triton server answers."""
from __future__ import annotations

from dataclasses import dataclass

_WILDCARD = {"0.0.0.0", "", "::", "[::]"}


@dataclass(frozen=True)
class Endpoint:
    host: str  # the address the server binds
    http_port: int
    grpc_port: int
    metrics_port: int
    pid: int | None = None  # tritonserver's pid when we launched it as a process

    @property
    def connect_host(self) -> str:
        """Address a local client dials (a wildcard bind is reached through loopback)."""
        return "127.0.0.1" if self.host in _WILDCARD else self.host

    # host:port for gRPC and Triton's HTTP client; http://host:port for HTTP requests; the Prometheus page.
    http_url = property(lambda self: f"{self.connect_host}:{self.http_port}")
    http_base = property(lambda self: f"http://{self.http_url}")
    grpc_url = property(lambda self: f"{self.connect_host}:{self.grpc_port}")
    metrics_url = property(lambda self: f"http://{self.connect_host}:{self.metrics_port}/metrics")

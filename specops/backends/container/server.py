"""A ready server inside a container started by the Docker launcher (a specops.backends.base.Server); a
containerised backend subclasses it for how its clients reach it."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specops.cost.container_cpu import container_cpu_seconds
from specops.launch import logs
from specops.triton.endpoint import Endpoint


@dataclass
class ContainerServer:
    """A ready server inside a container started by the Docker launcher."""

    launcher: Any
    handle: Any
    log_path: Path
    image: str
    stop_timeout_s: float
    endpoint: Endpoint
    probe: Callable[[], bool] | None = None  # the backend's readiness probe for the served variant

    def describe(self) -> str:
        return f"container {self.handle.name}"

    def state(self) -> str | None:
        return self.launcher.state(self.handle)

    def answers(self, timeout_s: float) -> bool:
        # The backends' probes carry their own few-second timeouts (client.is_ready, http_ok).
        return self.probe is None or bool(self.probe())

    def log_tail(self, lines: int = 20) -> str:
        return logs.tail(self.launcher.text(self.handle), lines)

    def stop(self, timeout_s: float | None = None) -> None:
        self.launcher.stop(self.handle, self.stop_timeout_s if timeout_s is None else timeout_s)  # idempotent

    def cpu_seconds(self) -> float:
        return container_cpu_seconds(self.launcher.client.containers.get(self.handle.id))

    def version(self) -> tuple[str, str]:
        return "container", self.image

    def record(self) -> dict[str, Any]:
        # No create_time: the process janitor never signals a container pid; it stops the
        # container by id (specops.host.janitor), and the launcher's janitor finds it by label.
        e = self.endpoint
        return {"pid": 0, "tool": "docker", "image": self.image, **self.handle.record(),
                "ports": sorted({e.http_port, e.grpc_port, e.metrics_port})}

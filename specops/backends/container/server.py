"""A ready server inside a container started by the Docker launcher (a specops.backends.base.Server); a
containerised backend subclasses it for how its clients reach it. OpenAIServing: what the OpenAI-server
backends (vllm serve, trtllm-serve) share."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specops.bench.prompts import chat_messages
from specops.cost.meter import container_cpu_seconds
from specops.http_client import http_ok, post_json
from specops.launch import logs
from specops.triton.client import Endpoint


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
        # container by id (specops.pipeline.janitor), and the launcher's janitor finds it by label.
        e = self.endpoint
        return {"pid": 0, "tool": "docker", "image": self.image, **self.handle.record(),
                "ports": sorted({e.http_port, e.grpc_port, e.metrics_port})}


class OpenAIServing:
    """Mixed into a ContainerBackend (before it) serving an OpenAI-compatible server: one HTTP port, ready on
    GET /health, specops' own requests on POST /v1/completions at temperature 0."""

    port_names = ("http",)
    serving: Any

    def headers(self) -> dict[str, str]:
        """Headers of specops' own requests (a server's key)."""
        return {}

    def probe(self, variant, endpoint: Endpoint):
        url = f"{endpoint.http_base}/health"
        return lambda timeout_s=2.0: http_ok(url, timeout_s)

    def probe_description(self, variant, endpoint: Endpoint) -> str:
        return f"GET {endpoint.http_base}/health; smoke: POST {endpoint.http_base}/v1/completions"

    def completion(self, variant, prompt: str, max_tokens: int) -> dict[str, Any]:
        return {"model": self.served_model(variant), "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0}

    def generate(self, server, variant, prompt: str, max_tokens: int) -> str:
        out = post_json(f"{server.endpoint.http_base}/v1/completions", self.completion(variant, prompt, max_tokens),
                        self.serving.request_timeout_s, headers=self.headers())
        return str(out["choices"][0]["text"])

    def generate_chat(self, server, variant, prompt: str, max_tokens: int) -> str:
        body = {"model": self.served_model(variant), "messages": chat_messages(prompt), "max_tokens": max_tokens,
                "temperature": 0.0}
        out = post_json(f"{server.endpoint.http_base}/v1/chat/completions", body, self.serving.request_timeout_s,
                        headers=self.headers())
        return str(out["choices"][0]["message"]["content"] or "")

    def own_request(self, variant) -> dict[str, Any]:
        return self.completion(variant, "def add(a, b):\n", 8)

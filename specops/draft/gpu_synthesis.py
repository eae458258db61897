"""The seed's data step: serve the target with `vllm serve` in a container while the synthesizer asks it.

The server binds the serving address on a free port; its key, when the worker has one, comes from
$VLLM_API_KEY by name (the container's environment and the client's Authorization header), never a
command line. The container is stopped and its log saved whatever happens to the synthesis.
"""
from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from specops.draft.gpu import VLLM_KEY_ENV, VllmSynthesisServer
from specops.draft.gpu_recipe import health_url, served_name, synthesis_container
from specops.teardown import teardown_quietly


@dataclass(frozen=True)
class SynthesisEndpoint:
    url: str  # http://host:port (the synthesizer adds /v1/chat/completions)
    model: str  # --served-model-name
    api_key: str | None


def _healthy(url: str) -> bool:
    try:  # loopback: never through a proxy
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=2.0) as resp:
            return 200 <= resp.status < 300
    except OSError:
        return False


@contextmanager
def synthesis_server(server: VllmSynthesisServer, profile: str, target_dir: Path, target_source: str, host: str,
                     log_path: Path, ready_timeout_s: float, stop_timeout_s: float,
                     launcher=None) -> Iterator[SynthesisEndpoint]:
    """A ready vLLM server for the duration of the block."""
    from specops.processes import pick_free_ports

    if launcher is None:
        from specops.launch import DockerLauncher

        launcher = DockerLauncher()
    port = pick_free_ports(host, 1)[0]
    spec = synthesis_container(server, profile, target_dir, target_source, host, port)
    handle = launcher.start(spec, log_path)
    try:
        launcher.wait_ready(handle, lambda: _healthy(health_url(host, port)), ready_timeout_s)
        yield SynthesisEndpoint(f"http://{host}:{port}", served_name(target_source),
                                os.environ.get(VLLM_KEY_ENV) or None)
    except BaseException:  # a container that will not stop must not hide why synthesis failed
        teardown_quietly(lambda: launcher.stop(handle, stop_timeout_s), f"stopping {handle.name}")
        raise
    launcher.stop(handle, stop_timeout_s)

"""The seed's data step: serve the target on backend vllm-serve (a container) while the synthesizer asks it.

The backend (VllmSynthesisServer.backend_section, built by specops.pipeline.backend.synthesis_backend_for; the
draft layer does not import backends) renders its serve.yaml, starts `vllm serve` through the Docker launcher
on a free port of the serving address, and waits for GET /health. Its key, when the worker has one, comes
from $VLLM_API_KEY by name (the container's environment and the client's Authorization header), never a
command line. The server is stopped and its log saved whatever happens to the synthesis.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specops.settings import secret, settings
from specops.sources.base import ModelArtifact
from specops.teardown import teardown_quietly
from specops.variant import Variant, base_method

# The target with speculation off; vLLM answers to its name (--served-model-name synthesis).
SYNTHESIS = Variant("synthesis", base_method())


@dataclass(frozen=True)
class SynthesisEndpoint:
    url: str  # http://host:port (the synthesizer adds /v1/chat/completions)
    model: str  # --served-model-name
    api_key: str | None


@contextmanager
def synthesis_server(backend: Any, target: ModelArtifact, repo: Path, log_path: Path) -> Iterator[SynthesisEndpoint]:
    """A ready vLLM server of `target` for the duration of the block. `backend`: the vllm-serve backend of
    draft.train.data.server; its files are rendered into `repo` (mounted read-only in the container)."""
    backend.render(SYNTHESIS, target, None, repo)
    server = backend.launch(SYNTHESIS, repo, log_path)  # stops what it started if it never gets ready
    stop = backend.serving.stop_timeout_s
    try:
        e = server.endpoint
        yield SynthesisEndpoint(f"http://{e.connect_host}:{e.http_port}", SYNTHESIS.model_name,
                                secret(settings().vllm_api_key))
    except BaseException:  # a container that will not stop must not hide why synthesis failed
        teardown_quietly(lambda: server.stop(stop), f"stopping the synthesis server ({server.describe()})")
        raise
    server.stop(stop)

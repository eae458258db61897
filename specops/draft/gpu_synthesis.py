"""The seed's data step: the target served on backend vllm-serve (a container) while the synthesizer asks it.

The flow serves it (draft.train.data.server, as the backend specops.pipeline.backend.synthesis_backend_for
builds; the draft layer does not import backends) the way it serves every variant: rendered, started through
the Docker launcher on a free port of the serving address, ready at GET /health, and stopped whatever happens
to the synthesis. Its key, when the worker has one, comes from $VLLM_API_KEY by name (the container's
environment and the client's Authorization header), never a command line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specops.run.variant import Variant, base_method
from specops.settings import secret, settings

# The target with speculation off; vLLM answers to its name (--served-model-name synthesis).
SYNTHESIS = Variant("synthesis", base_method())


@dataclass(frozen=True)
class SynthesisEndpoint:
    url: str  # http://host:port (the synthesizer adds /v1/chat/completions)
    model: str  # --served-model-name
    api_key: str | None


def synthesis_endpoint(server: Any) -> SynthesisEndpoint:
    """Where the synthesizer reaches the served SYNTHESIS variant (a server of backend vllm-serve)."""
    return SynthesisEndpoint(server.endpoint.http_base, SYNTHESIS.model_name, secret(settings().vllm_api_key))

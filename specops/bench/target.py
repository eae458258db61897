"""What a served variant offers a load generator: its API, where it listens, what every request carries.

Backends describe their server in these terms; benchmark tools translate them into their own
flags. Nothing here is one tool's vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Api(StrEnum):
    """Request formats of the servers specops runs."""

    # Triton KServe gRPC, the vLLM backend's model I/O: text_input, stream, sampling_parameters (JSON).
    KSERVE_VLLM = "kserve/vllm"
    # Triton KServe gRPC, the TensorRT-LLM inflight_batcher ensemble: text_input, max_tokens, ...
    KSERVE_TRTLLM = "kserve/tensorrtllm"
    # Triton KServe gRPC, the TensorRT-LLM LLM-API model: text_input and sampling_param_* inputs.
    KSERVE_LLMAPI = "kserve/trtllm-llmapi"
    # Triton's HTTP generate / generate_stream endpoint with the vLLM backend's model I/O.
    TRITON_GENERATE = "triton/generate"
    OPENAI_COMPLETIONS = "openai/completions"
    OPENAI_CHAT = "openai/chat"


GRPC_APIS = frozenset({Api.KSERVE_VLLM, Api.KSERVE_TRTLLM, Api.KSERVE_LLMAPI})


def addresses(apis: tuple[Api, ...], grpc: str | None = None, http: str | None = None) -> dict[Api, str]:
    """Each API's address on a server that listens on `grpc` (host:port) and/or `http` (http://host:port)."""
    out = {}
    for api in apis:
        address = grpc if api in GRPC_APIS else http
        if address is None:
            raise ValueError(f"{api.value} needs the server's {'gRPC' if api in GRPC_APIS else 'HTTP'} address")
        out[api] = address
    return out


@dataclass(frozen=True)
class BenchTarget:
    """One served model as a load generator reaches it."""

    model: str
    # Every API the server answers for this model -> its address (host:port for gRPC,
    # http://host:port for HTTP APIs).
    endpoints: dict[Api, str]
    streaming: bool = True
    # Inputs every request must carry for this model, in the model's own names (besides the
    # prompt and the output length, which each tool sets the way the API takes them).
    inputs: dict[str, Any] = field(default_factory=dict)
    # Whether a request can force exactly N output tokens (min-tokens / ignore-EOS exist).
    pins_output_length: bool = True
    # A second name the server also answers to, shared by every variant of a run, while each answer still names
    # `model`: one request body naming the alias can go to every variant's server, and each answer says which
    # server gave it. None: the server answers to `model` only, or its answers would not tell servers apart.
    alias: str | None = None
    # Why the server takes no alias (a tool's refusal to mix variants in one run quotes it); None: not said.
    no_alias: str | None = None

    @property
    def apis(self) -> tuple[Api, ...]:
        return tuple(self.endpoints)

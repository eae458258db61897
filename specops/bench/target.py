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
# Where the server applies the target's chat template to the request's messages; every other API sends text raw.
CHAT_APIS = frozenset({Api.OPENAI_CHAT})


def pick(preferred: tuple[Api, ...], offered: tuple[Api, ...], chat: bool | None = None) -> Api | None:
    """The first of `preferred` (a tool's APIs) the server offers; `chat`: a chat API only (True), or none (False)."""
    return next((a for a in preferred if a in offered and (chat is None or (a in CHAT_APIS) == chat)), None)


@dataclass(frozen=True)
class RequestKind:
    """How a run sends its prompts: as chat requests (the server renders them with the target's template) or raw."""

    chat: bool
    note: str  # why, in a few words

    @property
    def name(self) -> str:
        return "chat" if self.chat else "completions"


def request_kind(asked: str, conversations: bool, preferred: tuple[Api, ...], offered: tuple[Api, ...]) -> RequestKind:
    """benchmark.api (`asked`: auto, chat or completions) for prompts that are conversations or plain text, with a
    tool that drives `preferred` on a server that offers `offered` (profile validation refuses an explicit choice
    no shared API serves)."""
    if asked == "chat":
        return RequestKind(True, "benchmark.api chat: the server applies the target's chat template")
    if asked == "completions":
        return RequestKind(False, "benchmark.api completions: the prompts' text sent raw")
    if not conversations:
        return RequestKind(False, "plain-text prompts: raw completions")
    if pick(preferred, offered, chat=True) is not None:
        return RequestKind(True, "conversations: the chat endpoint, the server applying the target's chat template")
    return RequestKind(False, "conversations, but no chat endpoint here (the server offers "
                       f"{', '.join(a.value for a in offered)}): their first user turns sent as raw text")


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

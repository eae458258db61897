"""Talk to a Triton server: readiness, streamed generation (vLLM I/O), our spec_decode metrics.

All tritonclient imports stay inside this module.
"""
from __future__ import annotations

import json
import queue
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from specops.http_client import get_text, http_ok

_WILDCARD = {"0.0.0.0", "", "::", "[::]"}


@dataclass(frozen=True)
class Endpoint:
    """Where a running Triton server answers."""

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


# The last three: the embedded runtime's step accounting (the analytical bound's inputs); absent elsewhere.
SPEC_COUNTERS = ("spec_decode_num_drafts", "spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens",
                 "spec_decode_num_emitted_tokens", "spec_decode_num_steps", "spec_decode_draft_seconds",
                 "spec_decode_verify_seconds")
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos"


# tritonclient's default message limits, and never an HTTP proxy for our loopback servers.
_GRPC_CHANNEL_ARGS = [
    ("grpc.max_send_message_length", 2**31 - 1),
    ("grpc.max_receive_message_length", 2**31 - 1),
    ("grpc.enable_http_proxy", 0),
]


class GenerateError(RuntimeError):
    """The server answered a generate request with an error."""


def is_ready(endpoint: Endpoint, models: Iterable[str] = (), timeout_s: float = 2.0) -> bool:
    """Server live and ready, and every named model ready (False while it cannot be reached)."""
    import tritonclient.grpc as grpcclient  # noqa: PLC0415
    from tritonclient.utils import InferenceServerException  # noqa: PLC0415

    client = grpcclient.InferenceServerClient(endpoint.grpc_url, channel_args=_GRPC_CHANNEL_ARGS)
    try:
        return (
            client.is_server_live(client_timeout=timeout_s)
            and client.is_server_ready(client_timeout=timeout_s)
            and all(client.is_model_ready(m, client_timeout=timeout_s) for m in models)
        )
    except InferenceServerException:
        return False
    finally:
        client.close()


def server_version(endpoint: Endpoint, timeout_s: float = 5.0) -> str:
    """The server's own version string (e.g. "2.51.0"), for the run manifest."""
    import tritonclient.grpc as grpcclient  # noqa: PLC0415

    client = grpcclient.InferenceServerClient(endpoint.grpc_url, channel_args=_GRPC_CHANNEL_ARGS)
    try:
        return client.get_server_metadata(client_timeout=timeout_s).version
    finally:
        client.close()


def generate(endpoint: Endpoint, model: str, prompt: str, max_tokens: int, temperature: float = 0.0,
             timeout_s: float = 120.0, **sampling: object) -> str:
    """Generate through gRPC streaming (`generate_stream` semantics); return the concatenated text.

    Sends `stream=True` and `exclude_input_in_output=True`, collects `text_output` deltas until the
    response flagged final. Raises GenerateError on a server error, TimeoutError past `timeout_s`.
    """
    import tritonclient.grpc as grpcclient  # noqa: PLC0415

    inputs = generate_inputs(prompt, max_tokens, temperature, **sampling)
    tensors = [infer_input(grpcclient, k, v) for k, v in inputs.items()]
    results: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(endpoint.grpc_url, channel_args=_GRPC_CHANNEL_ARGS)
    try:
        client.start_stream(callback=lambda result, error: results.put((result, error)))
        client.async_stream_infer(model, tensors, enable_empty_final_response=True)
        return _collect(results, time.monotonic() + timeout_s, timeout_s)
    finally:
        client.stop_stream(cancel_requests=True)
        client.close()


def generate_inputs(prompt: str, max_tokens: int, temperature: float = 0.0, **sampling: object) -> dict[str, object]:
    """The request's inputs by name (vLLM backend I/O): what generate() sends."""
    params = {"max_tokens": max_tokens, "temperature": temperature, **sampling}
    return {"text_input": prompt, "stream": True, "sampling_parameters": json.dumps(params),
            "exclude_input_in_output": True}


def _collect(results: queue.Queue, deadline: float, timeout_s: float) -> str:
    pieces: list[str] = []
    while True:
        try:
            result, error = results.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError(f"no final response within {timeout_s:.0f}s") from None
        if error is not None:
            raise GenerateError(str(error))
        out = result.as_numpy("text_output")
        if out is not None:
            pieces.extend(x.decode("utf-8") if isinstance(x, bytes) else str(x) for x in out.reshape(-1))
        final = result.get_response().parameters.get("triton_final_response")
        if final is not None and final.bool_param:
            return "".join(pieces)


_DTYPES = {bool: ("BOOL", bool), int: ("INT32", np.int32), float: ("FP32", np.float32), str: ("BYTES", np.object_)}


def infer_input(grpcclient, name: str, value: bool | int | float | str):
    """One request input of shape [1], its Triton type from the value's (a str is sent as UTF-8 bytes)."""
    dtype, np_dtype = _DTYPES[type(value)]
    tensor = grpcclient.InferInput(name, [1], dtype)
    tensor.set_data_from_numpy(np.array([value.encode("utf-8") if isinstance(value, str) else value], dtype=np_dtype))
    return tensor


# --- metrics -------------------------------------------------------------------------------
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


def parse_metrics(text: str, model: str | None = None) -> dict[str, float]:
    """Our spec_decode_* series from Prometheus text, summed over labels (or one `model` label).

    Keys: the SPEC_COUNTERS names (0.0 when absent) and, per draft position k,
    `spec_decode_num_accepted_tokens_per_pos[k]`. A `vllm:` prefix or `_total` suffix on the
    exported name is tolerated, so vLLM's own /metrics parse the same way.
    """
    out = {name: 0.0 for name in SPEC_COUNTERS}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        name = match["name"].removeprefix("vllm:").removesuffix("_total")
        if name not in out and name != PER_POSITION:
            continue
        labels = dict(m.group("key", "value") for m in _LABEL.finditer(match["labels"] or ""))
        if model is not None and labels.get("model", labels.get("model_name")) != model:
            continue
        value = float(match["value"])
        if name == PER_POSITION:
            name = f"{PER_POSITION}[{int(labels.get('position', 0))}]"
        out[name] = out.get(name, 0.0) + value
    return out


def accepted_per_position(metrics: dict[str, float]) -> list[float]:
    """The per-position series of `parse_metrics` output as a list indexed by position."""
    found = {
        int(k[len(PER_POSITION) + 1 : -1]): v for k, v in metrics.items() if k.startswith(PER_POSITION + "[")
    }
    return [found.get(i, 0.0) for i in range(max(found) + 1)] if found else []


def metrics_answer(endpoint: Endpoint, timeout_s: float = 2.0) -> bool:
    """The metrics port answers (tritonserver starts it after the HTTP and gRPC services)."""
    return http_ok(endpoint.metrics_url, timeout_s)


def read_metrics(endpoint: Endpoint, model: str | None = None, timeout_s: float = 5.0) -> dict[str, float]:
    """Fetch the metrics port and parse our spec_decode_* series (see `parse_metrics`)."""
    return parse_metrics(get_text(endpoint.metrics_url, timeout_s), model)

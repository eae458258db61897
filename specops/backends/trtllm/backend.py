"""Backend `trtllm`: the TRT-LLM LLM-API (PyTorch) Triton model in the `-trtllm-python-py3` container.

The container's own `/app/all_models/llmapi` template is copied inside the container (its
model.py and config.pbtxt match the TRT-LLM inside it); specops renders `tensorrt_llm/1/model.yaml`
(speculative_config spelled as the image's TensorRT-LLM accepts it), a config.pbtxt addendum, and a
tritonserver wrapper that binds the profile's address, then starts `launch_triton_server.py` as the
Triton tutorial does.
"""
from __future__ import annotations

import queue
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import yaml

from specops.acceptance.model import Acceptance
from specops.acceptance.trtllm_perf_metrics import parse_perf_metrics
from specops.backends.conformance import flag_names, not_in, request_findings
from specops.backends.container.backend import ContainerBackend
from specops.backends.container.placement import Placed
from specops.backends.container.server import ContainerServer
from specops.backends.trtllm.config import TrtllmBackendConfig
from specops.backends.trtllm.llmapi_support import LlmApiSupport, llm_args_findings
from specops.backends.trtllm.triton_launch import loopback_wrapper, wrapper_steps
from specops.bench.target import BenchTarget
from specops.methods import MethodConfig
from specops.run.variant import Variant
from specops.triton import client
from specops.triton.client import Endpoint
from specops.triton.model_config import mc, to_pbtxt

MODEL = "tensorrt_llm"  # the served model name of the llmapi template
TEMPLATE = "/app/all_models/llmapi/"  # in the container (tutorial)
REPO = "/opt/tritonserver/llmapi_repo/"  # in the container (tutorial)
ADDENDUM = "specops-config-addendum.pbtxt"
LAUNCH = "/app/scripts/launch_triton_server.py"
# What genai-perf 0.0.16's TensorRTLLMConverter puts in every kserve payload besides text_input. The
# llmapi config.pbtxt declares none of them and Triton rejects undeclared inputs, so the addendum
# declares them optional; model.py never reads them (it reads the sampling_param_* inputs instead).
GENAI_PERF_INPUTS = (("max_tokens", mc.TYPE_INT32), ("min_length", mc.TYPE_INT32),
                     ("exclude_input_in_output", mc.TYPE_BOOL), ("stream", mc.TYPE_BOOL))


def model_yaml(config: TrtllmBackendConfig, support: LlmApiSupport, method: MethodConfig, target: str,
               draft: str | None) -> dict[str, Any]:
    """tensorrt_llm/1/model.yaml: the template's keys (model, backend, parallel sizes, triton_config)
    plus speculative_config, in the tutorial's order. model.py pops triton_config and hands the rest
    to LLM(**args), so every other key must be an LLM-API arg of the image's TensorRT-LLM."""
    doc: dict[str, Any] = {"model": target, "backend": "pytorch",
                           "tensor_parallel_size": config.tensor_parallel_size,
                           "pipeline_parallel_size": config.pipeline_parallel_size}
    spec = support.speculative_config(method, draft)
    if spec is not None:
        doc["speculative_config"] = spec
    doc |= dict(config.llm_args)
    doc["triton_config"] = {"max_batch_size": config.max_batch_size, "decoupled": config.decoupled}
    return doc


def config_addendum(decoupled: bool) -> str:
    """Appended to the template's config.pbtxt (repeated `input` entries concatenate in text format).

    launch_triton_server.py passes --disable-auto-complete-config, so model.py never applies
    triton_config.decoupled itself: a decoupled model says so here."""
    extra = mc.ModelConfig()
    for name, dtype in GENAI_PERF_INPUTS:
        extra.input.add(name=name, data_type=dtype, dims=[1], optional=True)
    if decoupled:
        extra.model_transaction_policy.decoupled = True
    return "\n# specops: inputs genai-perf --backend tensorrtllm sends (ignored by model.py)\n" + to_pbtxt(extra)


def request_inputs(config: TrtllmBackendConfig, max_tokens: int) -> dict[str, Any]:
    """The inputs of specops' own requests (smoke, check), all read by the llmapi model.py."""
    inputs: dict[str, Any] = {"streaming": False, "sampling_param_max_tokens": max_tokens,
                              "sampling_param_temperature": 0.0, "sampling_param_top_k": 1,
                              "sampling_param_exclude_input_from_output": True}
    if config.perf_metrics:
        inputs["sampling_param_return_perf_metrics"] = True
    return inputs


def benchmark_inputs(config: TrtllmBackendConfig) -> dict[str, Any]:
    """The sampling_param_* inputs every benchmark request must carry for the LLM-API model.py to
    decode greedily and return only new text (a tool's own max_tokens / exclude_input_in_output /
    stream are not what it reads); the output length travels as sampling_param_max_tokens."""
    inputs: dict[str, Any] = {"sampling_param_temperature": 0.0, "sampling_param_top_k": 1,
                              "sampling_param_exclude_input_from_output": True}
    if config.decoupled:
        inputs["streaming"] = True
    return inputs


ACCEPTANCE_SOURCE = "TRT-LLM LLM API return_perf_metrics"


def acceptance_from(responses: list[tuple[float, float]], max_draft_len: int) -> Acceptance:
    """Totals over the responses specops saw; one linear draft of max_draft_len per request per step
    (TRT-LLM docs), so steps = ceil(draft tokens / max_draft_len) per response."""
    accepted = sum(a for a, _ in responses)
    drafted = sum(d for _, d in responses)
    steps = sum(-(-d // max_draft_len) for _, d in responses) if max_draft_len else 0
    return Acceptance(f"{ACCEPTANCE_SOURCE} over specops' {len(responses)} check requests (genai-perf's requests "
                      "do not ask for it)", float(steps), float(drafted), float(accepted), covers_benchmark=False)


@dataclass
class LlmApiServer(ContainerServer):
    perf: list[tuple[float, float]] = field(default_factory=list)  # (accepted, drafted) per response


class TrtllmBackend(ContainerBackend):
    config: TrtllmBackendConfig
    name = "trtllm"
    repo_in_container = "/specops/repo"  # our rendered files, copied over the template in the container
    server_cls = LlmApiServer

    # --- rendering ------------------------------------------------------------------------
    def files(self, variant: Variant, placed: Placed) -> dict[str, str]:
        doc = model_yaml(self.config, self.support(variant), variant.method, placed.target.ref,
                         placed.draft.ref if placed.draft else None)
        return {f"{MODEL}/1/model.yaml": yaml.safe_dump(doc, sort_keys=False),
                ADDENDUM: config_addendum(self.config.decoupled),
                **loopback_wrapper(self.serving.host)}

    # --- serving --------------------------------------------------------------------------
    def in_container_steps(self, variant: Variant, endpoint: Endpoint) -> list[str]:
        ours = self.repo_in_container
        return [
            f"cp -R {TEMPLATE} {REPO}",
            f"cp -R {ours}/. {REPO}",
            f"cat {REPO}{ADDENDUM} >> {REPO}{MODEL}/config.pbtxt",
            *wrapper_steps(ours, LAUNCH, [f"--model_repo={REPO}", f"--grpc_port={endpoint.grpc_port}",
                                          f"--http_port={endpoint.http_port}",
                                          f"--metrics_port={endpoint.metrics_port}"]),
        ]

    def command(self, variant: Variant, endpoint: Endpoint) -> list[str]:
        return self.bash(self.in_container_steps(variant, endpoint))

    def served_model(self, variant: Variant) -> str:
        return MODEL

    def generate(self, server: LlmApiServer, variant: Variant, prompt: str, max_tokens: int) -> str:
        outputs = infer(server.endpoint, prompt, request_inputs(self.config, max_tokens),
                        self.serving.request_timeout_s)
        perf = parse_perf_metrics(outputs)
        if perf is not None and variant.method.speculative:
            server.perf.append(perf)
        return "".join(_text(x) for x in np.asarray(outputs["text_output"]).reshape(-1))

    # --- acceptance -----------------------------------------------------------------------
    def _zero_why(self, variant: Variant) -> str:
        llmapi = self.support(variant).release.llmapi
        return (llmapi.perf_zero_on_pytorch if llmapi and llmapi.perf_zero_on_pytorch
                else "the llmapi model returned no drafted tokens")

    def acceptance_why(self, variant: Variant) -> str | None:
        return None if self.config.perf_metrics else "backend.perf_metrics is false"

    def acceptance_description(self, variant: Variant) -> str:
        return (f"{ACCEPTANCE_SOURCE} on specops' check requests (genai-perf's do not ask for it); reported "
                f"unavailable if they read zero drafted tokens, as expected here: {self._zero_why(variant)}")

    def read_acceptance(self, server: LlmApiServer, variant: Variant, settle: bool) -> Acceptance:
        if not server.perf or not sum(d for _, d in server.perf):
            return Acceptance.unavailable(self.config.image, f"{len(server.perf)} responses with perf metrics "
                                          f"carried no drafted tokens: {self._zero_why(variant)}")
        return acceptance_from(server.perf, variant.method.draft_length())

    def bench_target(self, server: ContainerServer | None, variant: Variant) -> BenchTarget:
        return BenchTarget(model=MODEL, endpoints=self.endpoints(server),
                           streaming=self.config.decoupled, inputs=benchmark_inputs(self.config),
                           pins_output_length=self.support(variant).release.llmapi.pins_output_length)

    def benchmark_notes(self, variant: Variant) -> list[str]:
        release = self.support(variant).release
        if release.llmapi.pins_output_length:
            return []
        return [f"output length not pinned on {self.config.image}: the Triton llmapi model of TensorRT-LLM "
                f"{release.version} reads no min-tokens or ignore-EOS input, so sampling_param_max_tokens only caps "
                "the length; compare the out tokens of both variants"]

    # --- conformance ----------------------------------------------------------------------
    def own_request(self, variant: Variant) -> dict[str, Any]:
        return {"text_input": "def add(a, b):\n", **request_inputs(self.config, 8)}

    def conformance(self, variant: Variant, requests: dict[str, list[dict[str, Any]]]) -> list[str]:
        s = self.support(variant)
        llmapi = s.release.llmapi
        doc = yaml.safe_load(self.all_files(variant, None, None)[f"{MODEL}/1/model.yaml"])
        found = llm_args_findings("model.yaml", {k: v for k, v in doc.items() if k not in llmapi.yaml_keys_popped},
                                  s.release)
        launch = self.in_container_steps(variant, self.plan_endpoint())[4].split()
        found += not_in("launch_triton_server.py", flag_names(launch), llmapi.launch_flags,
                        f"a flag of its TensorRT-LLM {s.release.version} copy")
        ignored = {name for name, _ in GENAI_PERF_INPUTS}  # declared by the addendum, never read
        for label, bodies in requests.items():
            for body in bodies:
                found += request_findings(label, body, llmapi.inputs_declared | ignored, llmapi.inputs_read, ignored)
        return found



def _text(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def infer(endpoint: Endpoint, prompt: str, inputs: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One request to the LLM-API model through the gRPC stream API (works decoupled or not), with
    `streaming` off so exactly one response comes back; its outputs by name."""
    import tritonclient.grpc as grpcclient  # noqa: PLC0415

    tensors = [client.infer_input(grpcclient, k, v) for k, v in {"text_input": prompt, **inputs}.items()]
    results: queue.Queue = queue.Queue()
    conn = grpcclient.InferenceServerClient(endpoint.grpc_url)
    try:
        conn.start_stream(callback=lambda result, error: results.put((result, error)))
        conn.async_stream_infer(MODEL, tensors)
        try:
            result, error = results.get(timeout=timeout_s)
        except queue.Empty:
            raise TimeoutError(f"no response from {MODEL} within {timeout_s:.0f}s") from None
        if error is not None:
            raise client.GenerateError(str(error))
        names = [o.name for o in result.get_response().outputs]
        return {n: result.as_numpy(n) for n in names}
    finally:
        conn.stop_stream(cancel_requests=True)
        conn.close()


__all__ = ["MODEL", "TrtllmBackend", "acceptance_from", "config_addendum", "benchmark_inputs", "infer",
           "model_yaml", "request_inputs"]

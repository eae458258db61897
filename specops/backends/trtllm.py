"""Backend `trtllm`: the TRT-LLM LLM-API (PyTorch) Triton model in the `-trtllm-python-py3` container.

The container's own `/app/all_models/llmapi` template is copied inside the container (its
model.py and config.pbtxt match the TRT-LLM inside it); specops renders only
`tensorrt_llm/1/model.yaml` and a config.pbtxt addendum, copied over the template, then starts
`launch_triton_server.py` as the Triton TRT-LLM tutorial does.
"""
from __future__ import annotations

import math
import queue
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from specops.backends import container_common as cc
from specops.backends.base import Backend, BenchTarget, PlanStep, Variant
from specops.backends.trtllm_config import DECODING_TYPE, TrtllmBackendConfig
from specops.methods import MethodConfig
from specops.report.results import Acceptance
from specops.sources.base import ModelArtifact
from specops.triton import client
from specops.triton.endpoint import Endpoint
from specops.triton.model_config import mc, to_pbtxt

MODEL = "tensorrt_llm"  # the served model name of the llmapi template
TEMPLATE = "/app/all_models/llmapi/"  # in the container (tutorial)
REPO = "/opt/tritonserver/llmapi_repo/"  # in the container (tutorial)
OURS = "/specops/repo"  # our rendered files, mounted read-only
ADDENDUM = "specops-config-addendum.pbtxt"
LAUNCH = "/app/scripts/launch_triton_server.py"
ACCEPTANCE_SOURCE = "TRT-LLM LLM API return_perf_metrics (per response, specops requests)"
# What genai-perf 0.0.16's TensorRTLLMConverter puts in every kserve payload (text_input aside).
# The llmapi config.pbtxt declares none of them and Triton rejects undeclared inputs, so the
# addendum declares them optional; the template's model.py ignores them (it reads sampling_param_*).
GENAI_PERF_INPUTS = (("max_tokens", mc.TYPE_INT32), ("min_length", mc.TYPE_INT32),
                     ("exclude_input_in_output", mc.TYPE_BOOL), ("stream", mc.TYPE_BOOL))


def speculative_config(config: TrtllmBackendConfig, method: MethodConfig, draft: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"decoding_type": DECODING_TYPE[method.kind], "max_draft_len": method.draft_length()}
    if draft is not None:
        spec[config.draft_key] = draft
    if method.kind == "ngram":
        # NGramDecodingConfig has no minimum: prompt_lookup_min has no equivalent here.
        spec["max_matching_ngram_size"] = method.prompt_lookup_max  # type: ignore[attr-defined]
    return spec


def model_yaml(config: TrtllmBackendConfig, method: MethodConfig, target: str, draft: str | None) -> dict[str, Any]:
    """tensorrt_llm/1/model.yaml: the template's keys (model, backend, parallel sizes, triton_config)
    plus speculative_config, in the tutorial's order. The template's `pytorch_backend_config` is left
    out: TRT-LLM >= 1.0 no longer accepts it (pass it through llm_args for older containers)."""
    doc: dict[str, Any] = {"model": target, "backend": "pytorch",
                           "tensor_parallel_size": config.tensor_parallel_size,
                           "pipeline_parallel_size": config.pipeline_parallel_size}
    if method.speculative:
        doc["speculative_config"] = speculative_config(config, method, draft)
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


def genai_perf_extra_inputs(config: TrtllmBackendConfig, output_tokens: int | None) -> dict[str, Any]:
    """`--extra-inputs` genai-perf must send so the LLM-API model gets its sampling_param_* inputs
    (its own max_tokens / exclude_input_in_output / stream are not what model.py reads)."""
    extra: dict[str, Any] = {"sampling_param_temperature": 0.0, "sampling_param_top_k": 1,
                             "sampling_param_exclude_input_from_output": True}
    if output_tokens is not None:
        extra["sampling_param_max_tokens"] = output_tokens
    if config.decoupled:
        extra["streaming"] = True
    return extra


def parse_perf_metrics(outputs: Mapping[str, Any]) -> tuple[float, float] | None:
    """(total_accepted_draft_tokens, total_draft_tokens) of one response, None without them.

    Shapes: config.pbtxt of triton_backend/all_models/llmapi (TRT-LLM) declares
    `total_accepted_draft_tokens`/`total_draft_tokens` TYPE_INT32 dims [1] and `acceptance_rate`
    TYPE_FP32 [1]; its model.py fills them from RequestOutput...request_perf_metrics.speculative_decoding
    when the request sets sampling_param_return_perf_metrics. Values arrive as numbers or strings."""
    if "total_draft_tokens" not in outputs or "total_accepted_draft_tokens" not in outputs:
        return None
    return _scalar(outputs["total_accepted_draft_tokens"]), _scalar(outputs["total_draft_tokens"])


def _scalar(value: Any) -> float:
    arr = np.asarray(value).reshape(-1)
    item = arr[0] if arr.size else 0
    if isinstance(item, bytes):
        item = item.decode()
    return float(item)


def acceptance_from(responses: list[tuple[float, float]], max_draft_len: int) -> Acceptance:
    """Totals over responses; drafting proposes max_draft_len tokens per step (TRT-LLM docs: one linear
    draft sequence of max_draft_len per request per step), so steps = ceil(draft tokens / max_draft_len)."""
    accepted = sum(a for a, _ in responses)
    drafted = sum(d for _, d in responses)
    steps = sum(math.ceil(d / max_draft_len) for _, d in responses) if max_draft_len else 0
    return Acceptance(ACCEPTANCE_SOURCE, float(steps), float(drafted), float(accepted), covers_benchmark=False)


@dataclass
class LlmApiServer(cc.ContainerServer):
    perf: list[tuple[float, float]] = field(default_factory=list)  # (accepted, drafted) per response
    max_draft_len: int = 0


class TrtllmBackend(Backend):
    config: TrtllmBackendConfig

    # --- rendering ------------------------------------------------------------------------
    def files(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> dict[str, str]:
        c, p = self.config, self.profile
        t = cc.place_model(p.target.source, target, c.models, c.mount_root, "target")
        d = None
        if variant.method.needs_draft and p.draft is not None:
            d = cc.place_model(cc.draft_source(p, draft), draft, c.models, c.mount_root, "draft")
        doc = model_yaml(c, variant.method, t.ref, d.ref if d else None)
        mounts = [(m.host, m.target) for m in (t, d) if m is not None and m.host is not None]
        return {f"{MODEL}/1/model.yaml": yaml.safe_dump(doc, sort_keys=False),
                ADDENDUM: config_addendum(c.decoupled), cc.SIDECAR: cc.sidecar(mounts)}

    def render(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> None:
        cc.write_files(out_dir, self.files(variant, target, draft))

    # --- serving --------------------------------------------------------------------------
    def in_container_steps(self, endpoint: Endpoint) -> list[str]:
        e = endpoint
        return [
            f"cp -R {TEMPLATE} {REPO}",
            f"cp -R {OURS}/. {REPO}",
            f"cat {REPO}{ADDENDUM} >> {REPO}{MODEL}/config.pbtxt",
            f"python3 {LAUNCH} --model_repo={REPO} --grpc_port={e.grpc_port} --http_port={e.http_port} "
            f"--metrics_port={e.metrics_port}",
            # launch_triton_server.py returns once mpirun is spawned: keep the container's main
            # process alive exactly as long as tritonserver runs (giving it 60 s to appear).
            "for _ in $(seq 60); do pgrep -x tritonserver >/dev/null && break; sleep 1; done",
            "while pgrep -x tritonserver >/dev/null; do sleep 5; done",
        ]

    def container_spec(self, variant: Variant, repo: Path | str, mounts: list[tuple[str, str]], endpoint: Endpoint):
        c = self.config
        binds = [(str(repo), OURS, True)] + [(h, t, True) for h, t in mounts]
        if c.hf_cache:
            binds.append((str(Path(c.hf_cache).expanduser()), cc.HF_CACHE_IN_CONTAINER, False))
        script = "set -e; " + "; ".join(self.in_container_steps(endpoint))
        return cc.container_spec(image=c.image, command=["bash", "-c", script], mounts=binds, shm_size=c.shm_size,
                                 gpus=c.gpus, labels=cc.backend_labels(self.profile.name, variant.name) | {"specops.backend": "trtllm"})

    def launch(self, variant: Variant, repo: Path, log_path: Path) -> cc.ContainerServer:
        from specops.processes import pick_free_ports  # noqa: PLC0415

        host = self.profile.serving.host  # launch_triton_server.py binds all addresses: ports only
        endpoint = Endpoint(host, *pick_free_ports(host, 3))
        spec = self.container_spec(variant, repo, cc.read_sidecar(repo), endpoint)
        server = cc.launch_container(spec, log_path, lambda: client.is_ready(endpoint, [MODEL]),
                                     self.profile.serving.ready_timeout_s, self.profile.serving.stop_timeout_s,
                                     endpoint=endpoint, server_cls=LlmApiServer)
        server.max_draft_len = variant.method.draft_length()
        return server

    def preflight(self) -> list[str]:
        return cc.preflight() + super().preflight()

    def generate(self, server: LlmApiServer, variant: Variant, prompt: str, max_tokens: int) -> str:
        outputs = infer(server.endpoint, prompt, max_tokens, self.config.perf_metrics,
                        self.profile.serving.request_timeout_s)
        perf = parse_perf_metrics(outputs)
        if perf is not None and variant.method.speculative:
            server.perf.append(perf)
        return "".join(_text(x) for x in np.asarray(outputs["text_output"]).reshape(-1))

    def acceptance(self, server: LlmApiServer) -> Acceptance | None:
        return acceptance_from(server.perf, server.max_draft_len) if server.perf else None

    def bench_target(self, server: cc.ContainerServer | None, variant: Variant) -> BenchTarget:
        url = server.endpoint.grpc_url if server else f"{self.profile.serving.host}:<grpc port>"
        return BenchTarget(url=url, model=MODEL, endpoint_type="kserve", backend="tensorrtllm",
                           streaming=self.config.decoupled,
                           extra_inputs=genai_perf_extra_inputs(self.config, self.profile.benchmark.output_tokens))

    def plan(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> list[PlanStep]:
        files = self.files(variant, target, draft)
        mounts = cc.parse_sidecar(files[cc.SIDECAR])
        endpoint = Endpoint(self.profile.serving.host, 0, 0, 0)
        spec = self.container_spec(variant, f"artifacts/{self.profile.name}/<run-id>/repository/{variant.name}",
                                   mounts, endpoint)
        placeholder = "<free port>"
        line = cc.plan_command(spec).replace("_port=0", f"_port={placeholder}")
        steps = [s.replace("_port=0", f"_port={placeholder}") for s in self.in_container_steps(endpoint)]
        extra = genai_perf_extra_inputs(self.config, self.profile.benchmark.output_tokens)
        return [
            PlanStep("render", files={f"repository/{k}": v for k, v in files.items()}),
            PlanStep("serve", commands=[line] + [f"(in container) {s}" for s in steps]),
            PlanStep("genai-perf inputs", commands=[
                f"--extra-inputs {k}:{str(v).lower() if isinstance(v, bool) else v}" for k, v in extra.items()]),
        ]


def _text(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def infer(endpoint: Endpoint, prompt: str, max_tokens: int, perf_metrics: bool, timeout_s: float) -> dict[str, Any]:
    """One greedy request to the LLM-API model through the gRPC stream API (works decoupled or not),
    `streaming` off so exactly one response comes back; its outputs by name."""
    import tritonclient.grpc as grpcclient  # noqa: PLC0415

    def tensor(name: str, value: Any, dtype: str, np_dtype):
        t = grpcclient.InferInput(name, [1], dtype)
        t.set_data_from_numpy(np.array([value], dtype=np_dtype))
        return t

    inputs = [tensor("text_input", prompt.encode("utf-8"), "BYTES", np.object_),
              tensor("streaming", False, "BOOL", bool),
              tensor("sampling_param_max_tokens", max_tokens, "INT32", np.int32),
              tensor("sampling_param_temperature", 0.0, "FP32", np.float32),
              tensor("sampling_param_top_k", 1, "INT32", np.int32),
              tensor("sampling_param_exclude_input_from_output", True, "BOOL", bool)]
    if perf_metrics:
        inputs.append(tensor("sampling_param_return_perf_metrics", True, "BOOL", bool))
    results: queue.Queue = queue.Queue()
    conn = grpcclient.InferenceServerClient(endpoint.grpc_url)
    try:
        conn.start_stream(callback=lambda result, error: results.put((result, error)))
        conn.async_stream_infer(MODEL, inputs)
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


"""Backend `vllm`: Triton's vLLM backend in the `-vllm-python-py3` container.

Renders `<model>/config.pbtxt` (backend vllm, one KIND_MODEL instance, as the Triton tutorial's
model repository) and `<model>/1/model.json` (vLLM engine args for the vLLM in the image: a nested
`speculative_config` where that vLLM has it, the flat speculative_* keys of vLLM <= 0.8.1 where not).
Acceptance comes from vLLM's own log lines where the engine under Triton prints them.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from specops.acceptance.model import Acceptance
from specops.acceptance.vllm_log import from_vllm_log
from specops.backends.conformance import not_in, request_findings
from specops.backends.container import ContainerBackend, ContainerServer, Placed
from specops.backends.vllm_config import VllmBackendConfig
from specops.backends.vllm_support import VllmSupport
from specops.bench.target import BenchTarget, addresses
from specops.methods import MethodConfig
from specops.triton import client
from specops.triton.endpoint import Endpoint
from specops.triton.model_config import ModelConfig, mc, to_pbtxt
from specops.variant import Variant

# V0 prints its cumulative counters at most every 5 s and only while the engine steps
# (data/vllm.yaml spec_decode_log.interval): wait past that, then make it step once.
V0_LOG_INTERVAL_S = 5.0
FLUSH_PROMPT = "def add(a, b):\n"


def vllm_model_config(name: str) -> ModelConfig:
    """config.pbtxt of a vLLM-backend model: the tutorial's backend and instance group."""
    config = mc.ModelConfig(name=name, backend="vllm")
    config.instance_group.add(kind=mc.ModelInstanceGroup.KIND_MODEL, count=1)
    return config


def engine_args(config: VllmBackendConfig, support: VllmSupport, method: MethodConfig, target: str,
                draft: str | None) -> dict[str, Any]:
    """model.json for one variant; `target`/`draft` are what vLLM should load (path or hub id)."""
    if support.nested:
        args = {"model": target} | _parallel(config)
        if method.speculative:
            args["speculative_config"] = speculative_config(config, support, method, draft)
    else:
        args = _flat(config, method, target, draft)
    return args | dict(config.engine_args)


def speculative_config(config: VllmBackendConfig, support: VllmSupport, method: MethodConfig,
                       draft: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"method": support.method}
    if draft is not None:
        spec["model"] = draft
    spec["num_speculative_tokens"] = method.draft_length()
    if config.draft_tensor_parallel_size is not None and draft is not None:
        spec["draft_tensor_parallel_size"] = config.draft_tensor_parallel_size
    if method.kind == "ngram":
        spec["prompt_lookup_max"] = method.prompt_lookup_max  # type: ignore[attr-defined]
        if method.prompt_lookup_min is not None:  # type: ignore[attr-defined]
            spec["prompt_lookup_min"] = method.prompt_lookup_min  # type: ignore[attr-defined]
    return spec


def _parallel(config: VllmBackendConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if config.tensor_parallel_size is not None:
        out["tensor_parallel_size"] = config.tensor_parallel_size
    if config.gpu_memory_utilization is not None:
        out["gpu_memory_utilization"] = config.gpu_memory_utilization
    return out


def _flat(config: VllmBackendConfig, method: MethodConfig, target: str, draft: str | None) -> dict[str, Any]:
    """The flat keys of vLLM <= 0.8.1, in the Triton tutorial's order: model, speculative_model,
    [draft TP], [TP], num_speculative_tokens."""
    args: dict[str, Any] = {"model": target}
    if method.speculative:
        args["speculative_model"] = draft if method.kind != "ngram" else "[ngram]"
        if config.draft_tensor_parallel_size is not None:
            args["speculative_draft_tensor_parallel_size"] = config.draft_tensor_parallel_size
    args |= _parallel(config)
    if method.speculative:
        args["num_speculative_tokens"] = method.draft_length()
        if method.kind == "ngram":
            args["ngram_prompt_lookup_max"] = method.prompt_lookup_max  # type: ignore[attr-defined]
            if method.prompt_lookup_min is not None:  # type: ignore[attr-defined]
                args["ngram_prompt_lookup_min"] = method.prompt_lookup_min  # type: ignore[attr-defined]
    return args


class VllmBackend(ContainerBackend):
    config: VllmBackendConfig
    name = "vllm"
    repo_in_container = "/model_repository"  # the tutorial's mount point

    def support(self, variant: Variant) -> VllmSupport:
        return self.config.resolve(variant.method)

    def version_notes(self, variant: Variant) -> list[str]:
        return self.support(variant).notes()

    # --- rendering ------------------------------------------------------------------------
    def mount_name(self, variant: Variant, role: str, name: str) -> str:
        # vLLM <= 0.8.x tells an EAGLE-1 draft from a plain draft model by 'eagle-' in its path
        # (data/vllm.yaml speculative_methods_source), so the draft's mount says so.
        if variant.method.kind == "eagle" and role == "draft" and "eagle-" not in name.lower():
            name = f"EAGLE-{name or role}"
        return super().mount_name(variant, role, name)

    def files(self, variant: Variant, placed: Placed) -> dict[str, str]:
        name = variant.model_name
        args = engine_args(self.config, self.support(variant), variant.method, placed.target.ref,
                           placed.draft.ref if placed.draft else None)
        return {f"{name}/config.pbtxt": to_pbtxt(vllm_model_config(name)),
                f"{name}/1/model.json": json.dumps(args, indent=4) + "\n"}

    # --- serving --------------------------------------------------------------------------
    def container_env(self, variant: Variant | None) -> dict[str, str]:
        extra = self.support(variant).env if variant is not None else {}
        return super().container_env(variant) | extra

    def command(self, variant: Variant, endpoint: Endpoint) -> list[str]:
        """The tutorial's tritonserver line, on our ports and address."""
        e = endpoint
        return ["tritonserver", f"--model-repository={self.repo_in_container}", "--model-control-mode=explicit",
                f"--load-model={variant.model_name}", f"--http-address={e.host}", f"--http-port={e.http_port}",
                f"--grpc-address={e.host}", f"--grpc-port={e.grpc_port}", f"--metrics-address={e.host}",
                f"--metrics-port={e.metrics_port}", f"--exit-timeout-secs={self.config.exit_timeout_s}"]

    def probe(self, variant: Variant, endpoint: Endpoint):
        return lambda: client.is_ready(endpoint, [variant.model_name])

    def probe_description(self, variant: Variant, endpoint: Endpoint) -> str:
        return f"Triton server and model {variant.model_name} ready (gRPC {endpoint.grpc_url})"

    def generate(self, server: ContainerServer, variant: Variant, prompt: str, max_tokens: int) -> str:
        # The vLLM backend speaks exactly the I/O of specops.triton.client.generate.
        return client.generate(server.endpoint, variant.model_name, prompt, max_tokens, temperature=0.0,
                               timeout_s=self.serving.request_timeout_s)

    # --- acceptance -----------------------------------------------------------------------
    def acceptance_why(self, variant: Variant) -> str | None:
        return self.support(variant).acceptance_why

    def acceptance_description(self, variant: Variant) -> str:
        return ("vLLM V0 'Speculative metrics' lines in the server log (cumulative; read after waiting one 5 s "
                "logging interval and one short request that makes the engine log)")

    def read_acceptance(self, server: ContainerServer, variant: Variant, settle: bool) -> Acceptance:
        if settle:
            time.sleep(V0_LOG_INTERVAL_S + 1.0)
            self.generate(server, variant, FLUSH_PROMPT, 8)
            time.sleep(1.0)  # the launcher copies the container log into log_path as it streams
        log = Path(server.log_path)
        found = from_vllm_log(log.read_text(encoding="utf-8", errors="replace") if log.exists() else "")
        if found is None:
            return Acceptance.unavailable(self.config.image, "vLLM printed no speculative-decoding metrics line "
                                          f"into {server.log_path} (are its stats logs disabled?)")
        return found

    def bench_target(self, server: ContainerServer | None, variant: Variant) -> BenchTarget:
        host = self.serving.host
        grpc = server.endpoint.grpc_url if server else f"{host}:<grpc port>"
        http = f"http://{server.endpoint.http_url}" if server else f"http://{host}:<http port>"
        return BenchTarget(model=variant.model_name, endpoints=addresses(self.registration.apis, grpc=grpc, http=http),
                           streaming=True)

    # --- conformance ----------------------------------------------------------------------
    def own_request(self, variant: Variant) -> dict[str, Any]:
        return client.generate_inputs(FLUSH_PROMPT, 8)

    def conformance(self, variant: Variant, requests: dict[str, list[dict[str, Any]]]) -> list[str]:
        s = self.support(variant)
        r, model = s.release, s.backend_model
        v = f"vLLM {r.version}"
        args = json.loads(self.all_files(variant, None, None)[f"{variant.model_name}/1/model.json"])
        found = not_in("model.json", args, r.engine_args, f"an engine arg of {v}")
        spec = args.get("speculative_config")
        if spec is not None:
            found += not_in("speculative_config", spec, r.speculative_config or (), f"a SpeculativeConfig field of {v}")
            found += not_in("speculative_config.method", [spec.get("method")], r.methods, f"a method of {v}")
        for label, bodies in requests.items():
            for body in bodies:
                found += request_findings(label, body, model.inputs_declared, model.inputs_read)
                sampling = json.loads(body.get("sampling_parameters") or "{}")
                found += not_in(f"{label} sampling_parameters", sampling, r.sampling_params,
                                f"a SamplingParams field of {v}")
        return found

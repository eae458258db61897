"""Backend `vllm`: Triton's vLLM backend in the `-vllm-python-py3` container.

Renders `<model>/config.pbtxt` (backend vllm, one KIND_MODEL instance, from the ModelConfig proto)
and `<model>/1/model.json` (vLLM engine args). Speculation goes into a nested
`speculative_config`, or into the flat keys of the Triton tutorial's model.json
(`legacy_keys`, for containers with vLLM <= 0.7).
"""
from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from specops.backends import container_common as cc
from specops.backends.base import Backend, BenchTarget, PlanStep, Variant
from specops.backends.vllm_config import NESTED_METHOD, VllmBackendConfig
from specops.methods import MethodConfig
from specops.report.results import Acceptance
from specops.sources.base import ModelArtifact
from specops.triton import client
from specops.triton.endpoint import Endpoint
from specops.triton.model_config import ModelConfig, mc, set_string_parameters, to_pbtxt

REPO_IN_CONTAINER = "/model_repository"  # the tutorial's mount point
ACCEPTANCE_SOURCE = "vLLM spec_decode Prometheus counters (Triton metrics port)"


def vllm_model_config(name: str) -> ModelConfig:
    """config.pbtxt of a vLLM-backend model: the tutorial's backend and instance group; the backend
    completes the I/O itself. REPORT_CUSTOM_METRICS makes it export vLLM's counters."""
    config = mc.ModelConfig(name=name, backend="vllm")
    config.instance_group.add(kind=mc.ModelInstanceGroup.KIND_MODEL, count=1)
    return set_string_parameters(config, {"REPORT_CUSTOM_METRICS": "true"})


def engine_args(config: VllmBackendConfig, method: MethodConfig, target: str, draft: str | None) -> dict[str, Any]:
    """model.json for one variant; `target`/`draft` are what vLLM should load (path or hub id)."""
    if config.legacy_keys:
        args = _legacy(config, method, target, draft)
    else:
        args = {"model": target}
        args |= _parallel(config)
        if method.speculative:
            args["speculative_config"] = speculative_config(config, method, draft)
    return args | dict(config.engine_args)


def speculative_config(config: VllmBackendConfig, method: MethodConfig, draft: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"method": NESTED_METHOD[method.kind]}
    if draft is not None:
        spec["model"] = draft
    spec["num_speculative_tokens"] = method.draft_length()
    if config.draft_tensor_parallel_size is not None and draft is not None:
        spec["draft_tensor_parallel_size"] = config.draft_tensor_parallel_size
    if method.kind == "ngram":
        spec["prompt_lookup_max"] = method.prompt_lookup_max  # type: ignore[attr-defined]
        spec["prompt_lookup_min"] = method.prompt_lookup_min  # type: ignore[attr-defined]
    return spec


def _parallel(config: VllmBackendConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if config.tensor_parallel_size is not None:
        out["tensor_parallel_size"] = config.tensor_parallel_size
    if config.gpu_memory_utilization is not None:
        out["gpu_memory_utilization"] = config.gpu_memory_utilization
    return out


def _legacy(config: VllmBackendConfig, method: MethodConfig, target: str, draft: str | None) -> dict[str, Any]:
    """The tutorial's key order: model, speculative_model, [draft TP], [TP], num_speculative_tokens."""
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
            args["ngram_prompt_lookup_min"] = method.prompt_lookup_min  # type: ignore[attr-defined]
    return args


class VllmBackend(Backend):
    config: VllmBackendConfig

    # --- rendering ------------------------------------------------------------------------
    def _placed(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None):
        c, p = self.config, self.profile
        t = cc.place_model(p.target.source, target, c.models, c.mount_root, "target")
        d = None
        if variant.method.needs_draft and p.draft is not None:
            d = cc.place_model(cc.draft_source(p, draft), draft, c.models, c.mount_root, "draft")
        return t, d

    def files(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> dict[str, str]:
        t, d = self._placed(variant, target, draft)
        name = variant.model_name
        args = engine_args(self.config, variant.method, t.ref, d.ref if d else None)
        mounts = [(m.host, m.target) for m in (t, d) if m is not None and m.host is not None]
        return {
            f"{name}/config.pbtxt": to_pbtxt(vllm_model_config(name)),
            f"{name}/1/model.json": json.dumps(args, indent=4) + "\n",
            cc.SIDECAR: cc.sidecar(mounts),
        }

    def render(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> None:
        cc.write_files(out_dir, self.files(variant, target, draft))

    # --- serving --------------------------------------------------------------------------
    def server_command(self, variant: Variant, endpoint: Endpoint) -> list[str]:
        """The tutorial's tritonserver line, on our ports and address."""
        e = endpoint
        return ["tritonserver", f"--model-repository={REPO_IN_CONTAINER}", "--model-control-mode=explicit",
                f"--load-model={variant.model_name}", f"--http-address={e.host}", f"--http-port={e.http_port}",
                f"--grpc-address={e.host}", f"--grpc-port={e.grpc_port}", f"--metrics-address={e.host}",
                f"--metrics-port={e.metrics_port}", f"--exit-timeout-secs={self.config.exit_timeout_s}"]

    def container_spec(self, variant: Variant, repo: Path | str, mounts: list[tuple[str, str]], endpoint: Endpoint):
        c = self.config
        binds = [(str(repo), REPO_IN_CONTAINER, True)] + [(h, t, True) for h, t in mounts]
        if c.hf_cache:
            binds.append((str(Path(c.hf_cache).expanduser()), cc.HF_CACHE_IN_CONTAINER, False))
        return cc.container_spec(image=c.image, command=self.server_command(variant, endpoint), mounts=binds,
                                 shm_size=c.shm_size, gpus=c.gpus,
                                 labels=cc.backend_labels(self.profile.name, variant.name) | {"specops.backend": "vllm"})

    def launch(self, variant: Variant, repo: Path, log_path: Path) -> cc.ContainerServer:
        from specops.processes import pick_free_ports  # noqa: PLC0415

        host = self.profile.serving.host
        endpoint = Endpoint(host, *pick_free_ports(host, 3))
        spec = self.container_spec(variant, repo, cc.read_sidecar(repo), endpoint)
        return cc.launch_container(spec, log_path, lambda: client.is_ready(endpoint, [variant.model_name]),
                                   self.profile.serving.ready_timeout_s, self.profile.serving.stop_timeout_s,
                                   endpoint=endpoint)

    def preflight(self) -> list[str]:
        return cc.preflight() + super().preflight()

    def generate(self, server: cc.ContainerServer, variant: Variant, prompt: str, max_tokens: int) -> str:
        # The vLLM backend speaks exactly the I/O of specops.triton.client.generate.
        return client.generate(server.endpoint, variant.model_name, prompt, max_tokens, temperature=0.0,
                               timeout_s=self.profile.serving.request_timeout_s)

    def acceptance(self, server: cc.ContainerServer) -> Acceptance | None:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(server.endpoint.metrics_url, timeout=5.0) as resp:
            return parse_acceptance(resp.read().decode("utf-8", "replace"))

    def bench_target(self, server: cc.ContainerServer | None, variant: Variant) -> BenchTarget:
        url = server.endpoint.grpc_url if server else f"{self.profile.serving.host}:<grpc port>"
        return BenchTarget(url=url, model=variant.model_name, endpoint_type="kserve",
                           backend="vllm", streaming=True)

    def plan(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> list[PlanStep]:
        files = self.files(variant, target, draft)
        mounts = cc.parse_sidecar(files[cc.SIDECAR])
        host = self.profile.serving.host
        endpoint = Endpoint(host, 0, 0, 0)
        spec = self.container_spec(variant, f"artifacts/{self.profile.name}/<run-id>/repository/{variant.name}",
                                   mounts, endpoint)
        line = cc.plan_command(spec).replace("-port=0", "-port=<free port>")
        return [PlanStep("render", files={f"repository/{k}": v for k, v in files.items()}),
                PlanStep("serve", commands=[line])]


def parse_acceptance(metrics_text: str) -> Acceptance | None:
    """vLLM's spec_decode counters; None when the server exports none (speculation off, or a
    vLLM backend that does not report them)."""
    if "spec_decode_num" not in metrics_text:
        return None
    m = client.parse_metrics(metrics_text)
    return Acceptance(ACCEPTANCE_SOURCE, m["spec_decode_num_drafts"], m["spec_decode_num_draft_tokens"],
                      m["spec_decode_num_accepted_tokens"])

"""Backend `trtllm-serve`: TensorRT-LLM's OpenAI-compatible server in its release container.

render: the extra-llm-api-options YAML (the DGX Spark playbook's keys from the profile, plus
`speculative_config` from the method, plus `enable_iter_perf_stats`); serve: `trtllm-serve
<target> --host --port --backend pytorch ... --extra_llm_api_options <yaml>`; ready: GET
/health; smoke: POST /v1/completions; acceptance: the iteration stats GET /metrics drains
(specDecodingStats), accumulated per server.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from specops.acceptance.trtllm_iter_stats import accumulate
from specops.backends.base import Backend, BenchTarget, PlanStep, Variant
from specops.backends import container_common as cc
from specops.backends.trtllm_serve_config import DECODING_TYPES, TrtllmServeBackendConfig
from specops.launch import ContainerSpec, describe_line
from specops.methods import MethodConfig
from specops.report.results import Acceptance
from specops.sources.base import ModelArtifact

YAML_NAME = "extra-llm-api-config.yml"  # the playbook's file name
SECRET_ENV = ("HF_TOKEN",)
SIDECAR = "specops-mounts.json"  # beside the YAML: host paths of target and draft for launch()


def speculative_config(cfg: TrtllmServeBackendConfig, method: MethodConfig, draft_dir: str) -> dict[str, Any] | None:
    if not method.speculative:
        return None
    if method.kind not in DECODING_TYPES:
        raise ValueError(f"trtllm-serve serves {', '.join(DECODING_TYPES)}, not {method.kind!r}")
    out: dict[str, Any] = {"decoding_type": cfg.decoding_type or DECODING_TYPES[method.kind],
                           "max_draft_len": method.draft_length()}
    if method.kind == "ngram":
        if method.prompt_lookup_min != 1:
            raise ValueError("TensorRT-LLM's NGram drafter matches from max_matching_ngram_size down to 1; "
                             "set method.prompt_lookup_min: 1 to run n-gram on trtllm-serve")
        out["max_matching_ngram_size"] = method.prompt_lookup_max
    else:
        out[cfg.speculative_model_key] = draft_dir
    return out


def extra_options(cfg: TrtllmServeBackendConfig, method: MethodConfig) -> dict[str, Any]:
    """The YAML document, keys in the playbook's order with speculative_config where it put it."""
    doc: dict[str, Any] = {}
    spec = speculative_config(cfg, method, f"{cfg.models_mount}/draft")
    for key, value in cfg.llm_api_options.items():
        if key == "kv_cache_config" and spec is not None:
            doc["speculative_config"] = spec
        doc[key] = value
    if spec is not None and "speculative_config" not in doc:
        doc["speculative_config"] = spec
    if cfg.enable_iter_perf_stats:
        doc["enable_iter_perf_stats"] = True
    return doc


def render_yaml(cfg: TrtllmServeBackendConfig, method: MethodConfig) -> str:
    return yaml.safe_dump(extra_options(cfg, method), sort_keys=False)


def model_name(cfg: TrtllmServeBackendConfig) -> str:
    return f"{cfg.models_mount}/target"  # the model argument, which /v1/models reports


def serve_argv(cfg: TrtllmServeBackendConfig) -> list[str]:
    argv = ["trtllm-serve", model_name(cfg), "--host", cfg.host, "--port", str(cfg.port), "--backend", "pytorch",
            "--tp_size", str(cfg.tp_size)]
    for flag in ("max_batch_size", "max_num_tokens", "kv_cache_free_gpu_memory_fraction"):
        if (value := getattr(cfg, flag)) is not None:
            argv += [f"--{flag}", f"{value:g}" if isinstance(value, float) else str(value)]
    return argv + ["--extra_llm_api_options", f"{cfg.config_mount}/{YAML_NAME}", *cfg.extra_args]


def container_command(cfg: TrtllmServeBackendConfig) -> list[str]:
    serve = shlex.join(serve_argv(cfg))
    if not cfg.pre_serve:
        return serve_argv(cfg)
    return ["bash", "-c", " && ".join([*cfg.pre_serve, f"exec {serve}"])]


@dataclass
class ServeServer(cc.ContainerServer):
    totals: Acceptance | None = None


class TrtllmServeBackend(Backend):
    config: TrtllmServeBackendConfig

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.config.host in ("0.0.0.0", "::", "") else self.config.host
        return f"http://{host}:{self.config.port}"

    def render(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / YAML_NAME).write_text(render_yaml(self.config, variant.method))
        draft_path = str(draft.path) if draft is not None and variant.method.speculative else None
        (out_dir / SIDECAR).write_text(json.dumps({"target": str(target.path), "draft": draft_path}, indent=2) + "\n")

    def _spec(self, variant: Variant, repo: Path | None, target: Path | None, draft: Path | None) -> ContainerSpec:
        cfg = self.config
        mounts = [(str(target), f"{cfg.models_mount}/target", True)] if target else []
        if draft is not None:
            mounts.append((str(draft), f"{cfg.models_mount}/draft", True))
        if repo is not None:
            mounts.append((str(repo), cfg.config_mount, True))
        # the playbook: --gpus=all --ipc=host --network host --ulimit memlock=-1 --ulimit stack=67108864
        return cc.container_spec(image=cfg.image, command=container_command(cfg), mounts=mounts, shm_size=None,
                                 env=cfg.env, secret_env=SECRET_ENV, ipc_mode="host",
                                 labels={"specops.backend": "trtllm", "specops.variant": variant.name})

    def launch(self, variant: Variant, repo: Path, log_path: Path) -> ServeServer:
        host = json.loads((repo / SIDECAR).read_text())
        draft = Path(host["draft"]) if host["draft"] else None
        ready = f"{self.base_url}/health"
        return cc.launch_container(self._spec(variant, repo, Path(host["target"]), draft), log_path,
                                   lambda: cc.http_ok(ready), self.profile.serving.ready_timeout_s,
                                   self.profile.serving.stop_timeout_s, server_cls=ServeServer)

    def generate(self, server: ServeServer, variant: Variant, prompt: str, max_tokens: int) -> str:
        body = {"model": model_name(self.config), "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0}
        out = cc.post_json(f"{self.base_url}/v1/completions", body, self.profile.serving.request_timeout_s)
        return str(out["choices"][0]["text"])

    def acceptance(self, server: ServeServer) -> Acceptance | None:
        if not self.profile.method.speculative or not self.config.enable_iter_perf_stats:
            return None
        server.totals = accumulate(server.totals, cc.get_json(f"{self.base_url}/metrics", 10.0))
        return server.totals

    def bench_target(self, server: ServeServer | None, variant: Variant) -> BenchTarget:
        return BenchTarget(url=self.base_url, model=model_name(self.config), endpoint_type="completions",
                           backend=None, streaming=True)

    def preflight(self) -> list[str]:
        return cc.preflight() + super().preflight()

    def plan(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> list[PlanStep]:
        cfg = self.config
        spec = self._spec(variant, Path(f"artifacts/{self.profile.name}/<run-id>/repository/{variant.name}"),
                          Path("<target checkpoint>"),
                          Path("<draft checkpoint>") if variant.method.speculative and self.profile.draft else None)
        return [PlanStep("render", files={f"repository/{variant.name}/{YAML_NAME}": render_yaml(cfg, variant.method)}),
                PlanStep("serve", commands=[describe_line(spec),
                                            f"ready: GET {self.base_url}/health; smoke: POST {self.base_url}/v1/completions"])]

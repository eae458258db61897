"""Backend `trtllm-serve`: TensorRT-LLM's OpenAI-compatible server in its release container.

render: the extra-llm-api-options YAML (the recipe's keys from the profile, plus `speculative_config`
spelled as the image's TensorRT-LLM accepts it, plus `enable_iter_perf_stats`); serve: `trtllm-serve
<target> --host --port --backend pytorch ... --extra_llm_api_options <yaml>`; ready: GET /health;
smoke: POST /v1/completions; acceptance: the iteration stats GET /metrics drains (specDecodingStats),
accumulated per server.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

import yaml

from specops.acceptance.model import Acceptance
from specops.acceptance.trtllm_iter_stats import accumulate
from specops.backends.conformance import flag_names, not_in
from specops.backends.container.backend import ContainerBackend
from specops.backends.container.placement import Placed
from specops.backends.container.server import ContainerServer, OpenAIServing
from specops.backends.trtllm.llmapi_support import LlmApiSupport, llm_args_findings
from specops.backends.trtllm.serve_config import TrtllmServeBackendConfig
from specops.bench.target import BenchTarget
from specops.http_client import get_json
from specops.methods import MethodConfig
from specops.run.variant import Variant
from specops.triton.client import Endpoint
from specops.versions.trtllm import completions_fields

YAML_NAME = "extra-llm-api-config.yml"  # the playbook's file name
# Why the variants' servers cannot share one load-generator run (BenchTarget.no_alias). trtllm-serve takes any
# model name a request gives and writes that same name back into every completions/chat answer: OpenAIServer.
# openai_completion / openai_chat never compare request.model with the served model (tensorrt_llm/serve/
# openai_server.py), and CompletionPostprocArgs.from_request / ChatPostprocArgs.from_request take
# `model=request.model`, which completion_stream_post_processor, completion_response_post_processor and the chat
# ones put in each chunk and body (tensorrt_llm/serve/postprocess_handlers.py). So one name sent to two servers
# comes back unchanged from both. A second served name is no help: --served_model_name takes one name (NVIDIA/
# TensorRT-LLM PR #11711); several (PR #12746, opened 2026-04-03) came after 1.3.0rc12 (main 2026-04-16). Read in
# main-branch snapshots of those files (code index: openai_server.py @00057725, postprocess_handlers.py
# @01bf1923); the v1.3.0rc12 tag itself could not be fetched (a 2.5 GB repository snapshot).
NO_ALIAS = ("trtllm-serve writes the request's own model name into every answer "
            "(tensorrt_llm/serve/postprocess_handlers.py, CompletionPostprocArgs.from_request), so answers to one "
            "name cannot say which server gave them")


def extra_options(cfg: TrtllmServeBackendConfig, support: LlmApiSupport, method: MethodConfig,
                  draft: str | None) -> dict[str, Any]:
    """The YAML document, keys in the playbook's order with speculative_config where it put it
    (before kv_cache_config)."""
    doc: dict[str, Any] = {}
    spec = support.speculative_config(method, draft)
    for key, value in cfg.llm_api_options.items():
        if key == "kv_cache_config" and spec is not None:
            doc["speculative_config"] = spec
        doc[key] = value
    if spec is not None and "speculative_config" not in doc:
        doc["speculative_config"] = spec
    if cfg.enable_iter_perf_stats:
        doc["enable_iter_perf_stats"] = True
    return doc


def serve_argv(cfg: TrtllmServeBackendConfig, model: str, endpoint: Endpoint) -> list[str]:
    argv = ["trtllm-serve", model, "--host", endpoint.host, "--port", str(endpoint.http_port), "--backend", "pytorch",
            "--tp_size", str(cfg.tp_size)]
    for flag in ("max_batch_size", "max_num_tokens", "kv_cache_free_gpu_memory_fraction"):
        if (value := getattr(cfg, flag)) is not None:
            argv += [f"--{flag}", f"{value:g}" if isinstance(value, float) else str(value)]
    return argv + ["--extra_llm_api_options", f"{cfg.config_mount}/{YAML_NAME}", *cfg.extra_args]


@dataclass
class ServeServer(ContainerServer):
    totals: Acceptance | None = None


class TrtllmServeBackend(OpenAIServing, ContainerBackend):
    config: TrtllmServeBackendConfig
    name = "trtllm-serve"
    server_cls = ServeServer
    mounts_by_role = True  # /models/target, /models/draft

    @property
    def repo_in_container(self) -> str:  # type: ignore[override]
        return self.config.config_mount

    # --- rendering ------------------------------------------------------------------------
    def files(self, variant: Variant, placed: Placed) -> dict[str, str]:
        doc = extra_options(self.config, self.support(variant), variant.method,
                            placed.draft.ref if placed.draft else None)
        return {YAML_NAME: yaml.safe_dump(doc, sort_keys=False)}

    # --- serving --------------------------------------------------------------------------
    def served_model(self, variant: Variant) -> str:
        """The model argument, which /v1/models reports and requests name."""
        return self.place(variant, None, None).target.ref

    def command(self, variant: Variant, endpoint: Endpoint) -> list[str]:
        argv = serve_argv(self.config, self.served_model(variant), endpoint)
        if not self.config.pre_serve:
            return argv
        return ["bash", "-c", " && ".join([*self.config.pre_serve, f"exec {shlex.join(argv)}"])]

    # --- acceptance -----------------------------------------------------------------------
    def acceptance_why(self, variant: Variant) -> str | None:
        return None if self.config.enable_iter_perf_stats else "backend.enable_iter_perf_stats is false"

    acceptance_text = "trtllm-serve GET /metrics iteration stats (specDecodingStats), drained and summed per server"

    def read_acceptance(self, server: ServeServer, variant: Variant, settle: bool) -> Acceptance:
        server.totals = accumulate(server.totals, get_json(f"{server.endpoint.http_base}/metrics", 10.0))
        if not server.totals.num_draft_tokens:
            # Whether the PyTorch executor fills specDecodingStats for one-model EAGLE-3 before 1.2 is
            # unverified (data/trtllm.yaml common.serve_metrics.spec_stats_semantics).
            return Acceptance.unavailable(self.config.image, "GET /metrics carried no specDecodingStats with drafted "
                                          "tokens for the requests so far")
        return server.totals

    def bench_target(self, server: ServeServer | None, variant: Variant) -> BenchTarget:
        return BenchTarget(model=self.served_model(variant), endpoints=self.endpoints(server), streaming=True,
                           no_alias=NO_ALIAS)

    # --- conformance ----------------------------------------------------------------------
    def conformance(self, variant: Variant, requests: dict[str, list[dict[str, Any]]]) -> list[str]:
        release = self.support(variant).release
        doc = yaml.safe_load(self.all_files(variant, None, None)[YAML_NAME])
        found = llm_args_findings(YAML_NAME, doc, release)
        argv = serve_argv(self.config, self.served_model(variant), self.plan_endpoint())
        found += not_in("trtllm-serve", flag_names(argv), release.serve_flags,
                        f"a flag of trtllm-serve in TensorRT-LLM {release.version}")
        for label, bodies in requests.items():
            for body in bodies:
                found += not_in(label, body, completions_fields(), "a /v1/completions field specops knows is read")
        return found

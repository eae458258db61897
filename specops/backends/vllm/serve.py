"""Backend `vllm-serve`: vLLM's own OpenAI server, in the vllm/vllm-openai image or as the vLLM CPU engine's process.

render: `serve.yaml`, the engine args (vllm_engine.engine_args, the renderer Triton's backend writes as
model.json) as vLLM's `--config` file: top-level keys in their flag spelling (vllm/utils/argparse_utils.py
load_config_file looks `--no-<key>` up before it turns underscores into dashes, so `enforce_eager: false`
would be dropped), nested dicts (speculative_config) passed as JSON. serve: `vllm serve --config ... --host
--port --served-model-name <variant> <ALIAS>` in the container (the alias lets one benchmark run address both
variants' servers by one name; each answer still names its variant); `python -m vllm.entrypoints.openai.api_server`
with the same arguments on CPU (data/vllm_cpu.yaml server_module). ready: GET /health. smoke: POST
/v1/completions. acceptance: the V1 engine's Prometheus counters on GET /metrics, per position, read
before and after the benchmark window; per request, --per-request-spec-decode-metrics (vLLM >= 0.32.0).
After ready, GET /server_info (dev endpoints, loopback only) holds the served config against serve.yaml.
"""
from __future__ import annotations

import ipaddress
import json
import logging
import shlex
from pathlib import Path
from typing import Any

import yaml

from specops.acceptance.model import Acceptance
from specops.acceptance.vllm_metrics import from_vllm_metrics
from specops.atomic_file import write_text
from specops.backends.conformance import not_in
from specops.backends.container.placement import Placed
from specops.backends.container.server import OpenAIServing
from specops.backends.process_server import ProcessServer, start_on_free_ports
from specops.backends.vllm import cpu as vllm_cpu
from specops.backends.vllm.config import VllmServeBackendConfig
from specops.backends.vllm.engine import VllmEngineBackend
from specops.backends.vllm.readback import ServedConfigError, findings, from_server_info, unseen
from specops.bench.target import BenchTarget
from specops.http_client import get_json, get_text
from specops.run.variant import BASE, SPECULATIVE, Variant
from specops.settings import env_name, secret, settings
from specops.triton.client import Endpoint

log = logging.getLogger(__name__)

CONFIG_NAME = "serve.yaml"
DEV_MODE = {"VLLM_SERVER_DEV_MODE": "1"}  # mounts /server_info (and vLLM's other dev endpoints)
# vLLM's server takes its key from here when --api-key is absent (vllm/entrypoints/openai/api_server.py).
KEY_ENV = env_name("vllm_api_key")
# Streaming responses carry the per-request metrics only in a final usage chunk (vllm/entrypoints/openai/
# completion/serving.py), sent when a request asks for usage (AIPerf does; genai-perf 0.0.16 does not, and
# fails on such a chunk - `choices: []` - so --enable-force-include-usage stays off).
PER_REQUEST_FLAGS = ("--per-request-spec-decode-metrics", "summary")
# The second name every compared variant's server answers to (BenchTarget.alias), so that one load generator
# run can name a single model (AIPerf's -m) for all of them. vLLM answers to every --served-model-name and puts
# the first in each response's `model` (vllm-cpu 0.32.0: vllm/config/model.py ModelConfig.served_model_name
# docstring; vllm/entrypoints/openai/models/serving.py OpenAIServingModels.model_name): the variant's own name
# goes first, so every answer still says which variant gave it.
ALIAS = "specops-interleaved"
# The variants a run compares; others (the data step's synthesis server) are asked by their own name only.
COMPARED = frozenset({SPECULATIVE, BASE})


def config_text(args: dict[str, Any]) -> str:
    """The --config file. A null is left out: vLLM's loader would pass the text 'None' as the flag's value
    (--max-num-seqs None: "invalid int value"), where leaving the key out gives vLLM's default, as null means."""
    return yaml.safe_dump({key.replace("_", "-"): value for key, value in args.items() if value is not None},
                          sort_keys=False)


def loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class VllmServeBackend(OpenAIServing, VllmEngineBackend):
    config: VllmServeBackendConfig
    name = "vllm-serve"
    repo_in_container = "/config"

    # --- rendering ------------------------------------------------------------------------
    def files(self, variant: Variant, placed: Placed) -> dict[str, str]:
        return {CONFIG_NAME: config_text(self.rendered_args(variant, placed))}

    # --- serving --------------------------------------------------------------------------
    def serve_args(self, variant: Variant, config_file: str, endpoint: Endpoint) -> list[str]:
        """What follows `vllm serve` (or the CPU engine's server module)."""
        args = ["--config", config_file, "--host", endpoint.host, "--port", str(endpoint.http_port),
                "--served-model-name", variant.model_name, *self.aliases(variant)]
        if variant.method.speculative and self.config.per_request_metrics and self.support(variant).per_request_metrics:
            args += PER_REQUEST_FLAGS
        return args + list(self.config.extra_args)

    def aliases(self, variant: Variant) -> tuple[str, ...]:
        """The names the variant's server answers to besides its own (after it on --served-model-name)."""
        return (ALIAS,) if variant.name in COMPARED else ()

    def command(self, variant: Variant, endpoint: Endpoint) -> list[str]:
        return ["vllm", "serve", *self.serve_args(variant, f"{self.repo_in_container}/{CONFIG_NAME}", endpoint)]

    def secret_env(self) -> tuple[str, ...]:
        return (env_name("hf_token"), *((KEY_ENV,) if self.config.api_key else ()))

    def process_env(self, variant: Variant | None) -> dict[str, str]:
        env = super().process_env(variant)
        if not self.config.api_key:
            env.pop(KEY_ENV, None)
        return env

    def headers(self) -> dict[str, str]:
        """specops' own requests carry the server's key where it has one."""
        key = secret(settings().vllm_api_key) if self.config.api_key else None
        return {"Authorization": f"Bearer {key}"} if key else {}

    def container_env(self, variant: Variant | None) -> dict[str, str]:
        return super().container_env(variant) | (DEV_MODE if self.reads_back() else {})

    def reads_back(self) -> bool:
        """The dev endpoints are opened on loopback only."""
        return self.config.read_back and loopback(self.serving.host)

    def start_process(self, variant: Variant, repo: Path, log_path: Path) -> ProcessServer:
        def on_free_ports() -> ProcessServer:
            endpoint = self.endpoint()
            argv = vllm_cpu.venv().server_argv() + self.serve_args(variant, str(Path(repo) / CONFIG_NAME), endpoint)
            return ProcessServer(argv, self.process_env(variant), log_path, self.probe(variant, endpoint),
                                 name="vLLM OpenAI server", version=("vllm", vllm_cpu.version()), endpoint=endpoint)

        return start_on_free_ports(on_free_ports, self.serving.ready_timeout_s, self.serving.stop_timeout_s,
                                   fixed_port=self.config.port is not None)

    def check_served(self, server, variant: Variant, repo: Path, log_path: Path) -> None:
        """GET /server_info against serve.yaml: a setting vLLM runs without stops the run at serve. The
        served config is kept beside the server's log (<log>-engine-config.json)."""
        rendered = yaml.safe_load((Path(repo) / CONFIG_NAME).read_text())
        rendered = {key.replace("-", "_"): value for key, value in rendered.items()}
        url = f"{server.endpoint.http_base}/server_info?config_format=json"
        served = from_server_info(get_json(url, 30.0))
        kept = Path(log_path).with_name(f"{Path(log_path).stem}-engine-config.json")
        write_text(kept, json.dumps(served, indent=1, sort_keys=True) + "\n")
        problems = findings(rendered, served)
        if problems:
            raise ServedConfigError(f"vLLM ({self.config.served_by}) does not run what {CONFIG_NAME} asks: "
                                    f"{'; '.join(problems)} (GET {url})")
        hidden = unseen(rendered, served)
        if hidden:
            log.info("served config of %s does not show %s (not checked)", variant.name, ", ".join(hidden))

    # --- acceptance -----------------------------------------------------------------------
    acceptance_text = ("vLLM's Prometheus counters on GET /metrics (vllm:spec_decode_num_drafts / _num_draft_tokens / "
                       "_num_accepted_tokens / _num_accepted_tokens_per_pos), read before and after the benchmark")

    def read_acceptance(self, server, variant: Variant, settle: bool) -> Acceptance:
        found = from_vllm_metrics(get_text(f"{server.endpoint.http_base}/metrics", 10.0))
        if found is None:
            return Acceptance.unavailable(self.serving_what(), "GET /metrics carried no vllm:spec_decode_* counters")
        return found

    def bench_target(self, server, variant: Variant) -> BenchTarget:
        aliases = self.aliases(variant)
        return BenchTarget(model=variant.model_name, endpoints=self.endpoints(server), streaming=True,
                           alias=aliases[0] if aliases else None)

    # --- plan -------------------------------------------------------------------------------
    def process_plan(self, variant: Variant) -> list[str]:
        endpoint = self.plan_endpoint()
        argv = vllm_cpu.venv().server_argv() + self.serve_args(variant, f"{self.run_repo(variant)}/{CONFIG_NAME}",
                                                           endpoint)
        serve = [f"{self.shown_env(variant)} {shlex.join(argv)}",
                 f"ready: {self.probe_description(variant, endpoint)}"
                 + ("; then GET /server_info is held against serve.yaml" if self.reads_back() else "")]
        return serve

    # --- conformance ----------------------------------------------------------------------
    def conformance(self, variant: Variant, requests: dict[str, list[dict[str, Any]]]) -> list[str]:
        r = self.support(variant).release
        v = f"vLLM {r.version}"
        args = yaml.safe_load(self.all_files(variant, None, None)[CONFIG_NAME])
        found = self.args_findings(CONFIG_NAME, {k.replace("-", "_"): a for k, a in args.items()}, r)
        request_fields = r.sampling_params | {"model", "prompt", "stream", "messages", "stream_options"}
        for label, bodies in requests.items():
            for body in bodies:
                found += not_in(label, body, request_fields, f"a /v1/completions field of {v} (SamplingParams)")
        return found

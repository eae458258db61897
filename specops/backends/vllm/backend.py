"""Backend `vllm`: Triton's vLLM backend, in the `-vllm-python-py3` container or on this host's CPU.

Renders `<model>/config.pbtxt` (backend vllm, one KIND_MODEL instance, as the Triton tutorial's
model repository) and `<model>/1/model.json` (vllm_engine.engine_args for the vLLM that serves: a nested
`speculative_config` where that vLLM has it, the flat speculative_* keys of vLLM <= 0.8.1 where not).
Acceptance comes from vLLM's own log lines where the engine under Triton prints them (V0).

launch: process runs the same repository on the tritonserver of nvidia-pytriton: Triton's own
vllm_backend code (backend_code, fetched at a pinned commit and never edited) in a backend directory
of ours (triton/vllm_backend_dir.py), its Python-backend stub in the vLLM CPU venv, which carries the
bridges between that code and the pinned vLLM (data/vllm_cpu.yaml triton_backend_bridges).
"""
from __future__ import annotations

import json
import logging
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specops.acceptance.model import Acceptance
from specops.acceptance.vllm_log import from_vllm_log
from specops.backends.conformance import not_in, request_findings
from specops.backends.container.placement import Placed
from specops.backends.container.server import ContainerServer
from specops.backends.triton_process import start_triton
from specops.backends.triton_server import TritonServer
from specops.backends.vllm import cpu as vllm_cpu
from specops.backends.vllm.config import VllmBackendConfig
from specops.backends.vllm.engine import VllmEngineBackend
from specops.backends.vllm.readback import ServedConfigError, findings, from_engine_log
from specops.http_client import HttpError
from specops.run.variant import Variant
from specops.settings import cache_root
from specops.sources.backend_code import BackendCode, SourceUnreachable, fetch_backend_code
from specops.triton import client
from specops.triton.backend_dir import triton_dist
from specops.triton.client import Endpoint
from specops.triton.model_config import ModelConfig, mc, to_pbtxt
from specops.triton.vllm_backend_dir import BRIDGES, vllm_backend_dir

log = logging.getLogger(__name__)

# V0 prints its cumulative counters at most every 5 s and only while the engine steps
# (data/vllm.yaml spec_decode_log.interval): wait past that, then make it step once.
V0_LOG_INTERVAL_S = 5.0
FLUSH_PROMPT = "def add(a, b):\n"


def vllm_model_config(name: str) -> ModelConfig:
    """config.pbtxt of a vLLM-backend model: the tutorial's backend and instance group."""
    config = mc.ModelConfig(name=name, backend="vllm")
    config.instance_group.add(kind=mc.ModelInstanceGroup.KIND_MODEL, count=1)
    return config


class VllmBackend(VllmEngineBackend):
    config: VllmBackendConfig
    name = "vllm"
    repo_in_container = "/model_repository"  # the tutorial's mount point

    # --- rendering ------------------------------------------------------------------------
    def mount_name(self, variant: Variant, role: str, name: str) -> str:
        # vLLM <= 0.8.x tells an EAGLE-1 draft from a plain draft model by 'eagle-' in its path
        # (data/vllm.yaml speculative_methods_source), so the draft's mount says so.
        if variant.method.kind == "eagle" and role == "draft" and "eagle-" not in name.lower():
            name = f"EAGLE-{name or role}"
        return super().mount_name(variant, role, name)

    def files(self, variant: Variant, placed: Placed) -> dict[str, str]:
        name = variant.model_name
        args = self.rendered_args(variant, placed)
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

    # --- launch: process --------------------------------------------------------------------
    def reads_back(self) -> bool:
        """The engine's start-up line is read back where it runs under our tritonserver."""
        return self.config.in_process

    def start_process(self, variant: Variant, repo: Path, log_path: Path):
        triton = self.triton_process(variant, repo, log_path)
        return start_triton(triton, self.serving.ready_timeout_s, self.serving.stop_timeout_s)

    def triton_process(self, variant: Variant, repo: Path, log_path: Path) -> TritonServer:
        """tritonserver with a backend directory holding Triton's vllm_backend at the pinned commit, its stub
        in the vLLM CPU venv (the bridge installed there, active through $SPECOPS_VLLM_BRIDGE)."""
        venv = vllm_cpu.venv()
        venv.install_bridge()
        code = self.backend_code(cache_root(), lambda line: log.info("%s", line))
        backend_dir = vllm_backend_dir(cache_root() / "triton-backends-vllm", triton_dist(), code.path, code.sha256,
                                       vllm_cpu.bridge_table())
        env = self.process_env(variant) | {vllm_cpu.BRIDGE_VAR: str(backend_dir / BRIDGES)}
        return TritonServer(repo, log_path, backend_dir=backend_dir, backend_dir_ready=True,
                            host=self.serving.host, exit_timeout_s=self.config.exit_timeout_s, python_bin=venv.bin,
                            base_env=env)

    def fetch_sources(self, cache_dir: Path, log: Callable[[str], None]) -> dict[str, str]:
        return {"backend.backend_code": self.backend_code(cache_dir, log).sha256} if self.config.in_process else {}

    def backend_code(self, cache_dir: Path, log: Callable[[str], None]) -> BackendCode:
        """Triton's vllm_backend at the pinned commit, cached; one that cannot be fetched names the field, the
        URL and the local override."""
        try:
            return fetch_backend_code(self.config.backend_code, cache_dir, log=log)
        except HttpError as error:
            raise SourceUnreachable(
                f"backend.backend_code: cannot fetch {self.config.backend_code} ({error}); without network, point "
                f"it at a checkout of the repository at commit {self.config.backend_code_commit}: --set "
                "backend.backend_code=/path/to/vllm_backend") from None

    def check_served(self, server, variant: Variant, repo: Path, log_path: Path) -> None:
        """The engine's start-up line against model.json: a setting it runs without stops the run here."""
        rendered = json.loads((Path(repo) / variant.model_name / "1" / "model.json").read_text())
        served = from_engine_log(Path(log_path).read_text(encoding="utf-8", errors="replace"))
        if served is None:
            log.warning("no engine start-up line in %s: the served config was not read back", log_path)
            return
        problems = findings(rendered, served)
        if problems:
            raise ServedConfigError(f"vLLM under Triton ({self.config.served_by}) does not run what model.json "
                                    f"asks: {'; '.join(problems)} (its start-up line in {log_path})")

    def process_plan(self, variant: Variant) -> list[str]:
        staged = Path(self.run_repo(variant))
        argv = TritonServer.describe_command(staged, host=self.serving.host, exit_timeout_s=self.config.exit_timeout_s,
                                             backend_dir=cache_root() / "triton-backends-vllm" / "<key>")
        serve = [f"code: {self.config.backend_code} (commit {self.config.backend_code_commit}) -> "
                 f"{cache_root() / 'code'}/..., verified on every use, never edited",
                 "backend directory: python/ (copies of nvidia-pytriton's Python backend and stub), vllm/ (the "
                 "code's src/), bridges.json: " + "; ".join(f"{b['module']}.{b['name']} -> {b['source']}"
                                                            for b in vllm_cpu.facts()["triton_backend_bridges"]),
                 f"environment: PATH={vllm_cpu.venv().bin}:... (the stub's interpreter) {self.shown_env(variant)}",
                 shlex.join(argv),
                 f"ready: {self.probe_description(variant, self.plan_endpoint())}; then the engine's start-up line "
                 "is held against model.json"]
        return serve

    # --- acceptance -----------------------------------------------------------------------
    def acceptance_why(self, variant: Variant) -> str | None:
        return self.support(variant).acceptance_why

    acceptance_text = ("vLLM V0 'Speculative metrics' lines in the server log (cumulative; read after waiting one 5 s "
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

    # --- conformance ----------------------------------------------------------------------
    def own_request(self, variant: Variant) -> dict[str, Any]:
        return client.generate_inputs(FLUSH_PROMPT, 8)

    def conformance(self, variant: Variant, requests: dict[str, list[dict[str, Any]]]) -> list[str]:
        s = self.support(variant)
        r, model = s.release, s.backend_model
        v = f"vLLM {r.version}"
        args = json.loads(self.all_files(variant, None, None)[f"{variant.model_name}/1/model.json"])
        found = self.args_findings("model.json", args, r)
        for label, bodies in requests.items():
            for body in bodies:
                found += request_findings(label, body, model.inputs_declared, model.inputs_read)
                sampling = json.loads(body.get("sampling_parameters") or "{}")
                found += not_in(f"{label} sampling_parameters", sampling, r.sampling_params,
                                f"a SamplingParams field of {v}")
        return found

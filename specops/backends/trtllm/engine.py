"""Backend `trtllm-engine`: TensorRT-LLM engines served by Triton's inflight_batcher_llm.

All steps run in the `-trtllm-python-py3` container through the Docker launcher: build (convert +
trtllm-build, a cached step of the flow), render (the image's inflight_batcher_llm filled by its own
fill_template.py), serve (launch_triton_server.py through the loopback wrapper). The commands are
pure functions in trtllm_engine_commands; what a release supports is trtllm_engine_support.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specops.acceptance.model import Acceptance
from specops.acceptance.trtllm_perf_metrics import from_perf_metrics
from specops.backends.conformance import flag_names, not_in, request_findings
from specops.backends.container.backend import ContainerBackend, write_files
from specops.backends.container.placement import Placed
from specops.backends.container.server import ContainerServer
from specops.backends.trtllm.engine_commands import (
    build_commands,
    launch_args,
    layout,
    render_commands,
    repository_parameters,
)
from specops.backends.trtllm.engine_config import TrtllmEngineBackendConfig
from specops.backends.trtllm.fill_template import TEMPLATE_OF, parse_substitutions
from specops.backends.trtllm.triton_launch import loopback_wrapper, wrapper_steps
from specops.bench.target import BenchTarget
from specops.http_client import post_json
from specops.run.plan_step import PlanStep
from specops.run.variant import Variant
from specops.sources.schemes import ModelArtifact
from specops.triton.client import Endpoint

RENDER_TIMEOUT_S = 600
ENGINES_PLACEHOLDER = "<engine cache>"


@dataclass
class EngineServer(ContainerServer):
    responses: list[dict] = field(default_factory=list)  # perf metrics of specops' own requests


class TrtllmEngineBackend(ContainerBackend):
    config: TrtllmEngineBackendConfig
    name = "trtllm-engine"
    server_cls = EngineServer
    mounts_by_role = True

    def __init__(self, config, deployment):
        super().__init__(config, deployment)
        self._engines: dict[str, Path] = {}

    @property
    def repo_in_container(self) -> str:  # type: ignore[override]
        return self.config.mounts.repository

    def version_notes(self, variant: Variant) -> list[str]:
        r = self.support(variant).release
        return [f"convert_checkpoint.py, trtllm-build, inflight_batcher_llm templates, fill_template.py and "
                f"launch_triton_server.py of TensorRT-LLM {r.version} / tensorrtllm_backend {r.backend_ref}"]

    def _layout(self, variant: Variant):
        return layout(self.config, variant.method.needs_draft and self.deployment.has_draft)

    # --- placement: engines are built from mounted checkpoints, never from hub ids ------------
    def hub_ok(self, variant: Variant, role: str) -> bool:
        return False

    def secret_env(self) -> tuple[str, ...]:
        return ()

    def extra_mounts(self, variant: Variant) -> list[tuple[str, str]]:
        engines = self._engines.get(variant.name, f"{ENGINES_PLACEHOLDER}/{variant.name}")
        return [(str(engines), self.config.mounts.engines)]

    # --- build (a cached step of the flow) ------------------------------------------------------
    def cache_identity(self) -> dict[str, Any]:
        """A TensorRT engine runs only on the GPU model it was built for, and only with the TensorRT of the
        image that built it: a shared cache hands an engine only to the same GPUs and the same image bytes
        (the Id, not the tag, which a re-pull can move)."""
        from specops.cost.nvml import gpu_architecture, gpu_indices  # noqa: PLC0415

        try:
            indices = gpu_indices(self.gpus())
        except ValueError:  # GPUs named by UUID: key on every GPU of the host, stricter than needed
            indices = None
        image = self.image_identity
        return {**super().cache_identity(), "gpu_architecture": gpu_architecture(indices),
                "image_id": image.id if image else None}

    def build(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> Path:
        """Convert and build the variant's engine(s) into out_dir in the image's container."""
        from specops.launch import DockerLauncher  # noqa: PLC0415

        script = " && ".join(shlex.join(s.argv) for s in build_commands(self.config, self.support(variant),
                                                                         variant.method, self._layout(variant)))
        out_dir.mkdir(parents=True, exist_ok=True)
        placed = self.place(variant, target, draft)
        mounts = [(h, t, True) for h, t in placed.mounts()] + [(str(out_dir), self.config.mounts.engines, False)]
        spec = self.spec(["bash", "-c", script], mounts, self.labels(f"build-{variant.name}", "step-build"),
                         secrets=False)
        DockerLauncher().run(spec, out_dir / "build.log", self.config.build_timeout_s)
        self.use_engines(variant, out_dir)
        return out_dir

    def use_engines(self, variant: Variant, engines_dir: Path) -> None:
        """Where a (possibly cached) build put this variant's engines; render() needs it."""
        self._engines[variant.name] = Path(engines_dir)

    # --- render: the image fills its own templates ----------------------------------------------
    def files(self, variant: Variant, placed: Placed) -> dict[str, str]:
        return loopback_wrapper(self.serving.host)

    def fill_script(self, variant: Variant) -> str:
        return " && ".join(shlex.join(a) for a in render_commands(self.config, variant.method, self._layout(variant)))

    def render(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> None:
        from specops.launch import DockerLauncher  # noqa: PLC0415

        if variant.name not in self._engines:
            raise RuntimeError(f"no engines for variant {variant.name!r}: call build() or use_engines() first")
        write_files(out_dir, self.all_files(variant, target, draft))
        spec = self.spec(["bash", "-c", self.fill_script(variant)], [(str(out_dir), self.repo_in_container, False)],
                         self.labels(f"render-{variant.name}", "step-render"), secrets=False)
        DockerLauncher().run(spec, out_dir.parent / f"render-{variant.name}.log", RENDER_TIMEOUT_S)

    # --- serving --------------------------------------------------------------------------
    def in_container_steps(self, variant: Variant, endpoint: Endpoint) -> list[str]:
        ports = {"http": endpoint.http_port, "grpc": endpoint.grpc_port, "metrics": endpoint.metrics_port}
        return wrapper_steps(self.repo_in_container, self.config.launch_script,
                             launch_args(self.config, variant.method, ports))

    def command(self, variant: Variant, endpoint: Endpoint) -> list[str]:
        return self.bash(self.in_container_steps(variant, endpoint))

    def served_model(self, variant: Variant) -> str:
        return self.support(variant).served_model

    def request_body(self, variant: Variant, prompt: str, max_tokens: int) -> dict[str, Any]:
        """specops' own generate request: only inputs the served model declares at this release;
        greedy is TensorRT-LLM's default, so no sampling inputs."""
        support = self.support(variant)
        body: dict[str, Any] = {"text_input": prompt, "max_tokens": max_tokens, "exclude_input_in_output": True}
        if support.perf_metrics and variant.method.speculative:
            body[support.release.perf_metrics_input] = True
        if variant.method.kind == "draft-target":
            body["num_draft_tokens"] = variant.method.draft_length()
        return body

    def generate(self, server: EngineServer, variant: Variant, prompt: str, max_tokens: int) -> str:
        url = f"{server.endpoint.http_base}/v2/models/{self.support(variant).served_model}/generate"
        out = post_json(url, self.request_body(variant, prompt, max_tokens), self.serving.request_timeout_s)
        if variant.method.speculative and "total_draft_tokens" in out:
            server.responses.append(out)
        return str(out.get("text_output", ""))

    # --- acceptance -----------------------------------------------------------------------
    def acceptance_why(self, variant: Variant) -> str | None:
        return self.support(variant).acceptance_why

    acceptance_text = ("TRT-LLM Triton backend return_perf_metrics outputs on specops' check requests (genai-perf's "
                       "requests do not ask for them)")

    def read_acceptance(self, server: EngineServer, variant: Variant, settle: bool) -> Acceptance:
        if not server.responses:
            return Acceptance.unavailable(self.config.image, "no response carried perf-metric outputs")
        method = variant.method  # tree methods (eagle, medusa) draft a variable number per step
        acc = from_perf_metrics(server.responses, method.draft_length() if method.kind == "draft-target" else None)
        return Acceptance(f"{acc.source} over specops' {len(server.responses)} check requests", acc.num_drafts,
                          acc.num_draft_tokens, acc.num_accepted_tokens, covers_benchmark=False)

    def bench_target(self, server: EngineServer | None, variant: Variant) -> BenchTarget:
        return BenchTarget(model=self.support(variant).served_model, endpoints=self.endpoints(server),
                           streaming=self.config.triton.decoupled_mode)

    # --- conformance ----------------------------------------------------------------------
    def own_request(self, variant: Variant) -> dict[str, Any]:
        return self.request_body(variant, "def add(a, b):\n", 8)

    def conformance(self, variant: Variant, requests: dict[str, list[dict[str, Any]]]) -> list[str]:
        s = self.support(variant)
        r, cfg = s.release, self.config
        v = f"TensorRT-LLM {r.version}"
        examples = {f"{cfg.app_dir}/{path}": name for name, path in r.convert_paths.items()}
        found: list[str] = []
        for step in build_commands(cfg, s, variant.method, self._layout(variant)):
            if step.argv[0] == "trtllm-build":
                found += not_in(step.name, flag_names(step.argv), r.build_flags, f"a trtllm-build flag of {v}")
            else:
                example = examples.get(step.argv[1])
                if example is None:
                    found.append(f"{step.name}: {step.argv[1]} is not a convert_checkpoint.py of {v}")
                else:
                    found += not_in(step.name, flag_names(step.argv), r.convert_flags[example],
                                    f"a flag of examples/{example}/convert_checkpoint.py in {v}")
        for argv in render_commands(cfg, variant.method, self._layout(variant)):
            if argv[1] == cfg.fill_template_script:
                model = Path(argv[3]).parent.name
                found += not_in(f"fill_template {model}", parse_substitutions(argv[4]),
                                r.models[TEMPLATE_OF[model]].template_keys, f"a key of its template in {r.backend_ref}")
        launch = self.in_container_steps(variant, self.plan_endpoint())[1].split()
        found += not_in("launch_triton_server.py", flag_names(launch), r.launch_flags, f"a flag in {r.backend_ref}")
        served = r.models[s.served_model]
        for label, bodies in requests.items():
            for body in bodies:
                found += request_findings(label, body, served.inputs, served.inputs)
        return found

    # --- plan -------------------------------------------------------------------------------
    def plan(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> list[PlanStep]:
        from specops.launch import describe_line  # noqa: PLC0415

        cfg, paths = self.config, self._layout(variant)
        builds = [shlex.join(s.argv) for s in build_commands(cfg, self.support(variant), variant.method, paths)]
        placed = self.place(variant, target, draft)
        engines = (f"{ENGINES_PLACEHOLDER}/{variant.name}", cfg.mounts.engines, False)
        mounts = [(h, t, True) for h, t in placed.mounts()] + [engines]
        build = self.spec(["bash", "-c", " && ".join(builds)], mounts,
                          self.labels(f"build-{variant.name}", "step-build"), secrets=False)
        params = repository_parameters(cfg, variant.method, paths)
        fills = {f"repository/{variant.name}/{m} (fill_template parameters, template {TEMPLATE_OF[m]})":
                 "\n".join(f"{k}: {v}" for k, v in p.items()) for m, p in params.items()}
        steps = super().plan(variant, target, draft)
        return [PlanStep("build engine (cached)", commands=[describe_line(build), *builds]),
                PlanStep("fill repository (in the image: cp + tools/fill_template.py)",
                         commands=[shlex.join(a) for a in render_commands(cfg, variant.method, paths)], files=fills),
                *steps]

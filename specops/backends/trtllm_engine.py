"""Backend `trtllm-engine`: TensorRT-LLM engines served by Triton's inflight_batcher_llm.

Steps, all in the `-trtllm-python-py3` container (the Triton tutorial's engine recipe,
triton-inference-server/tutorials Feature_Guide/Speculative_Decoding/TRT-LLM/README.md):
  build   examples/<eagle|medusa|llama>/convert_checkpoint.py, then trtllm-build
          (`--speculative_decoding_mode eagle|medusa|draft_tokens_external`); the base
          variant gets the tutorial's plain llama engine; draft-target also builds the draft
          engine (TensorRT-LLM examples/draft_target_model/README.md)
  render  copy /app/all_models/inflight_batcher_llm, fill each config.pbtxt with the image's
          own tools/fill_template.py and the parameter sets of specops.backends.fill_template
  serve   scripts/launch_triton_server.py --world_size=<tp> --model_repo=<repo>
`build_commands`/`render_commands` are pure (plan, tests); `build`/`render`/`launch` run
them through the Docker launcher (specops.launch; see "container glue" below).
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specops.acceptance.trtllm_perf_metrics import from_perf_metrics
from specops.backends.base import Backend, BenchTarget, PlanStep, Variant
from specops.backends.fill_template import DRAFT_MODEL, TEMPLATE_OF, fill_command, parameter_sets
from specops.backends.trtllm_engine_config import TrtllmEngineBackendConfig
from specops.backends import container_common as cc
from specops.launch import ContainerSpec, DockerLauncher, describe_line
from specops.methods import MethodConfig
from specops.report.results import Acceptance
from specops.sources.base import ModelArtifact

def container_spec(image: str, command: list[str], mounts: list[tuple[str, str, bool]], *,
                   shm_size: str | None = "2g", labels: dict[str, str] | None = None) -> ContainerSpec:
    """A GPU container for engine steps: engines are built from mounted checkpoints, so no HF_TOKEN."""
    return cc.container_spec(image=image, command=command, mounts=mounts, shm_size=shm_size, secret_env=(),
                             labels={"specops.backend": "trtllm"} | dict(labels or {}))


# --- trtllm-engine ------------------------------------------------------------------------
ACCEPTANCE_SOURCE_NOTE = "over specops' own check requests (genai-perf requests do not ask for perf metrics)"
SPEC_MODE = {"eagle": "eagle", "medusa": "medusa", "draft-target": "draft_tokens_external"}


@dataclass(frozen=True)
class BuildStep:
    name: str  # convert-target | build-target | convert-draft | build-draft
    argv: list[str]


@dataclass(frozen=True)
class Layout:
    """In-container paths of one variant's inputs and outputs."""

    target: str
    draft: str | None
    work: str  # checkpoints and engines (the cached build output, mounted from the host)

    @property
    def engine(self) -> str:
        return f"{self.work}/engine"

    @property
    def draft_engine(self) -> str:
        return f"{self.work}/draft_engine"


def layout(cfg: TrtllmEngineBackendConfig, has_draft: bool) -> Layout:
    m = cfg.mounts
    return Layout(f"{m.models}/target", f"{m.models}/draft" if has_draft else None, m.engines)


def _flags(pairs: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in pairs.items():
        if value is not None:
            out += [f"--{key}", str(value)]
    return out


def _convert(cfg: TrtllmEngineBackendConfig, example: str, model: str, out: str, extra: dict[str, Any]) -> list[str]:
    """convert_checkpoint.py argv in the tutorial's order: model dirs, output, dtype, then method flags."""
    dirs = {k: v for k, v in extra.items() if k.endswith("_model_dir")}
    rest = {k: v for k, v in extra.items() if k not in dirs} | ({"tp_size": cfg.tp_size} if cfg.tp_size > 1 else {})
    return ["python3", f"{cfg.examples_dir}/{example}/convert_checkpoint.py", "--model_dir", model, *_flags(dirs),
            "--output_dir", out, "--dtype", cfg.dtype, *_flags(rest)]


def _build(cfg: TrtllmEngineBackendConfig, ckpt: str, out: str, flags: dict[str, str], owned: dict[str, Any]) -> list[str]:
    sizes = {"max_batch_size": cfg.max_batch_size, "max_input_len": cfg.max_input_len, "max_seq_len": cfg.max_seq_len}
    return ["trtllm-build", "--checkpoint_dir", ckpt, "--output_dir", out, *_flags(flags), *_flags(owned),
            *_flags(sizes)]


def build_commands(cfg: TrtllmEngineBackendConfig, method: MethodConfig, paths: Layout) -> list[BuildStep]:
    """convert_checkpoint + trtllm-build argv for one variant (method `none` is the base engine)."""
    kind, ckpt = method.kind, f"{paths.work}/ckpt"
    if kind == "none":
        return [BuildStep("convert-target", _convert(cfg, cfg.base_convert_example, paths.target, ckpt, {})),
                BuildStep("build-target", _build(cfg, ckpt, paths.engine, cfg.base_build_flags, {}))]
    if kind not in SPEC_MODE:
        raise ValueError(f"trtllm-engine builds eagle, medusa, draft-target and the base engine, not {kind!r}")
    if paths.draft is None:
        raise ValueError(f"method {kind!r} needs a draft checkpoint")
    mode = {"speculative_decoding_mode": SPEC_MODE[kind]}
    if kind == "eagle":
        if cfg.max_draft_len is None:
            raise ValueError("eagle on trtllm-engine needs backend.max_draft_len (the tutorial uses 63)")
        extra = {"eagle_model_dir": paths.draft, "max_draft_len": cfg.max_draft_len,
                 "num_eagle_layers": method.draft_length(), "max_non_leaves_per_layer": cfg.max_non_leaves_per_layer}
        return [BuildStep("convert-target", _convert(cfg, "eagle", paths.target, ckpt, extra)),
                BuildStep("build-target", _build(cfg, ckpt, paths.engine, cfg.build_flags, mode))]
    if kind == "medusa":
        extra = {"medusa_model_dir": paths.draft, "num_medusa_heads": method.draft_length()}
        owned = mode | {"max_draft_len": cfg.max_draft_len}
        return [BuildStep("convert-target", _convert(cfg, "medusa", paths.target, ckpt, extra)),
                BuildStep("build-target", _build(cfg, ckpt, paths.engine, cfg.build_flags, owned))]
    draft_ckpt = f"{paths.work}/draft_ckpt"
    return [BuildStep("convert-draft", _convert(cfg, cfg.base_convert_example, paths.draft, draft_ckpt, {})),
            BuildStep("build-draft", _build(cfg, draft_ckpt, paths.draft_engine, cfg.draft_build_flags, {})),
            BuildStep("convert-target", _convert(cfg, cfg.base_convert_example, paths.target, ckpt, {})),
            BuildStep("build-target", _build(cfg, ckpt, paths.engine, cfg.build_flags,
                                             mode | {"max_draft_len": method.draft_length()}))]


def repository_parameters(cfg: TrtllmEngineBackendConfig, method: MethodConfig, paths: Layout) -> dict[str, dict[str, str]]:
    choices = None
    if method.kind == "eagle" and cfg.eagle_choices:
        choices = ("eagle_choices", cfg.eagle_choices)
    elif method.kind == "medusa" and getattr(method, "medusa_choices", None):
        choices = ("medusa_choices", method.medusa_choices)
    return parameter_sets(cfg.triton, max_batch_size=cfg.max_batch_size, engine_dir=paths.engine,
                          tokenizer_dir=paths.target, choices=choices,
                          draft_engine_dir=paths.draft_engine if method.kind == "draft-target" else None)


def render_commands(cfg: TrtllmEngineBackendConfig, method: MethodConfig, paths: Layout) -> list[list[str]]:
    """Copy the image's inflight_batcher_llm into the repository mount and fill every model."""
    repo = cfg.mounts.repository
    out = [["cp", "-R", f"{cfg.all_models}/.", f"{repo}/"]]
    sets = repository_parameters(cfg, method, paths)
    if DRAFT_MODEL in sets:  # examples/draft_target_model/README.md: a renamed copy of tensorrt_llm
        out += [["cp", "-R", f"{repo}/tensorrt_llm", f"{repo}/{DRAFT_MODEL}"],
                ["sed", "-i", f's/name: "tensorrt_llm"/name: "{DRAFT_MODEL}"/g', f"{repo}/{DRAFT_MODEL}/config.pbtxt"]]
    for model, params in sets.items():
        out.append(fill_command(cfg.fill_template_script, f"{repo}/{model}/config.pbtxt", params))
    return out


def serve_command(cfg: TrtllmEngineBackendConfig, method: MethodConfig) -> list[str]:
    launch = ["python3", cfg.launch_script, f"--world_size={cfg.tp_size}", f"--model_repo={cfg.mounts.repository}"]
    if method.kind == "draft-target":
        launch.append("--multi-model")
    for name, port, default in (("http_port", cfg.http_port, 8000), ("grpc_port", cfg.grpc_port, 8001),
                                ("metrics_port", cfg.metrics_port, 8002)):
        if port != default:
            launch.append(f"--{name}={port}")
    # launch_triton_server.py starts tritonserver under mpirun in the background and returns;
    # keep the container's main process alive after it.
    return ["bash", "-c", shlex.join(launch) + " && exec sleep infinity"]


def served_model(method: MethodConfig) -> str:
    return "tensorrt_llm_bls" if method.kind == "draft-target" else "ensemble"


SIDECAR = "specops-mounts.json"  # beside the models in the repository: host paths launch() mounts


@dataclass
class EngineServer(cc.ContainerServer):
    responses: list[dict] = field(default_factory=list)  # perf metrics of specops' own requests


class TrtllmEngineBackend(Backend):
    config: TrtllmEngineBackendConfig

    def __init__(self, profile):
        super().__init__(profile)
        self._engines: dict[str, Path] = {}

    def _mounts(self, target: Path | None, draft: Path | None, work: Path | None, repo: Path | None,
                build: bool = False) -> list[tuple[str, str, bool]]:
        m = self.config.mounts
        pairs = [(target, f"{m.models}/target", True), (draft, f"{m.models}/draft", True),
                 (work, m.engines, not build), (repo, m.repository, build)]
        return [(str(src), dst, ro) for src, dst, ro in pairs if src is not None]

    def _layout(self, variant: Variant, draft: object) -> Layout:
        return layout(self.config, draft is not None and variant.method.speculative)

    def build(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> Path:
        """Convert and build the variant's engine(s) into out_dir (a cached step of the flow)."""
        paths = self._layout(variant, draft)
        script = " && ".join(shlex.join(s.argv) for s in build_commands(self.config, variant.method, paths))
        out_dir.mkdir(parents=True, exist_ok=True)
        mounts = self._mounts(target.path, draft.path if paths.draft else None, out_dir, None, build=True)
        spec = container_spec(self.config.image, ["bash", "-c", script], mounts, shm_size=self.config.shm_size,
                              labels={"specops.step": f"build-{variant.name}"})
        DockerLauncher().run(spec, out_dir / "build.log", self.config.build_timeout_s)
        self.use_engines(variant, out_dir)
        return out_dir

    def use_engines(self, variant: Variant, engines_dir: Path) -> None:
        """Where a (possibly cached) build put this variant's engines; render() needs it."""
        self._engines[variant.name] = Path(engines_dir)

    def render(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> None:
        if variant.name not in self._engines:
            raise RuntimeError(f"no engines for variant {variant.name!r}: call build() or use_engines() first")
        paths = self._layout(variant, draft)
        out_dir.mkdir(parents=True, exist_ok=True)
        host = {"target": str(target.path), "draft": str(draft.path) if paths.draft and draft else None,
                "engines": str(self._engines[variant.name])}
        (out_dir / SIDECAR).write_text(json.dumps(host, indent=2) + "\n")
        script = " && ".join(shlex.join(a) for a in render_commands(self.config, variant.method, paths))
        spec = container_spec(self.config.image, ["bash", "-c", script], self._mounts(None, None, None, out_dir),
                              labels={"specops.step": f"render-{variant.name}"})
        DockerLauncher().run(spec, out_dir.parent / f"render-{variant.name}.log", 600)

    def launch(self, variant: Variant, repo: Path, log_path: Path) -> EngineServer:
        host = json.loads((repo / SIDECAR).read_text())
        mounts = self._mounts(Path(host["target"]), host["draft"] and Path(host["draft"]), Path(host["engines"]), repo)
        spec = container_spec(self.config.image, serve_command(self.config, variant.method), mounts,
                              shm_size=self.config.shm_size, labels={"specops.variant": variant.name})
        ready = f"http://127.0.0.1:{self.config.http_port}/v2/health/ready"
        return cc.launch_container(spec, log_path, lambda: cc.http_ok(ready), self.profile.serving.ready_timeout_s,
                                   self.profile.serving.stop_timeout_s, server_cls=EngineServer)

    def generate(self, server: EngineServer, variant: Variant, prompt: str, max_tokens: int) -> str:
        """Triton generate endpoint; greedy is TRT-LLM's default, so no sampling inputs are sent."""
        body: dict[str, Any] = {"text_input": prompt, "max_tokens": max_tokens, "exclude_input_in_output": True,
                                "return_perf_metrics": True}
        if variant.method.kind == "draft-target":
            body["num_draft_tokens"] = variant.method.draft_length()
        url = f"http://127.0.0.1:{self.config.http_port}/v2/models/{served_model(variant.method)}/generate"
        out = cc.post_json(url, body, self.profile.serving.request_timeout_s)
        if variant.method.speculative and "total_draft_tokens" in out:
            server.responses.append(out)
        return str(out.get("text_output", ""))

    def acceptance(self, server: EngineServer) -> Acceptance | None:
        if not server.responses:
            return None
        method = self.profile.method  # tree methods (eagle, medusa) draft a variable number per step
        acc = from_perf_metrics(server.responses, method.draft_length() if method.kind == "draft-target" else None)
        return Acceptance(f"{acc.source} {ACCEPTANCE_SOURCE_NOTE}", acc.num_drafts, acc.num_draft_tokens,
                          acc.num_accepted_tokens, covers_benchmark=False)

    def bench_target(self, server: EngineServer | None, variant: Variant) -> BenchTarget:
        return BenchTarget(url=f"127.0.0.1:{self.config.grpc_port}", model=served_model(variant.method),
                           endpoint_type="kserve", backend="tensorrtllm", streaming=self.config.triton.decoupled_mode)

    def preflight(self) -> list[str]:
        return cc.preflight() + super().preflight()

    def plan(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> list[PlanStep]:
        cfg, method = self.config, variant.method
        paths = layout(cfg, method.speculative and self.profile.draft is not None)
        run = Path(f"artifacts/{self.profile.name}/<run-id>")
        build_mounts = self._mounts(Path("<target checkpoint>"), Path("<draft checkpoint>") if paths.draft else None,
                                    Path(f"<engine cache>/{variant.name}"), None, build=True)
        builds = [shlex.join(s.argv) for s in build_commands(cfg, method, paths)]
        build = container_spec(cfg.image, ["bash", "-c", " && ".join(builds)], build_mounts, shm_size=cfg.shm_size)
        fills = [shlex.join(a) for a in render_commands(cfg, method, paths)]
        files = {f"repository/{variant.name}/{m} (fill_template parameters, template {TEMPLATE_OF[m]})":
                 "\n".join(f"{k}: {v}" for k, v in p.items()) for m, p in repository_parameters(cfg, method, paths).items()}
        serve_mounts = self._mounts(Path("<target checkpoint>"), Path("<draft checkpoint>") if paths.draft else None,
                                    Path(f"<engine cache>/{variant.name}"), run / "repository" / variant.name)
        serve = container_spec(cfg.image, serve_command(cfg, method), serve_mounts, shm_size=cfg.shm_size)
        return [PlanStep("build engine (cached)", commands=[describe_line(build), *builds]),
                PlanStep("render (in the image: cp + tools/fill_template.py)", commands=fills, files=files),
                PlanStep("serve", commands=[describe_line(serve),
                                            f"ready: GET http://127.0.0.1:{cfg.http_port}/v2/health/ready"])]

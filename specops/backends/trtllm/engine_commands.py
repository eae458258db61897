"""The trtllm-engine recipe's commands, pure (plan, tests, and the backend that runs them).

The Triton tutorial's engine recipe (triton-inference-server/tutorials@f6fd598
Feature_Guide/Speculative_Decoding/TRT-LLM/README.md), for the TensorRT-LLM release in the image:
  build   examples/<eagle|medusa|llama>/convert_checkpoint.py (paths per release), then trtllm-build
          (`--speculative_decoding_mode eagle|medusa|draft_tokens_external`); the base variant gets the
          tutorial's plain engine; draft-target also builds the draft engine (TensorRT-LLM
          examples/draft_target_model/README.md)
  render  copy /app/all_models/inflight_batcher_llm and fill each config.pbtxt with the image's own
          tools/fill_template.py and the parameter sets of specops.backends.trtllm.fill_template
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specops.backends.trtllm.engine_config import TrtllmEngineBackendConfig
from specops.backends.trtllm.engine_support import EngineSupport
from specops.backends.trtllm.fill_template import DRAFT_MODEL, fill_command, parameter_sets
from specops.methods import MethodConfig


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
    root = cfg.mount_root.rstrip("/")
    return Layout(f"{root}/target", f"{root}/draft" if has_draft else None, cfg.mounts.engines)


def _flags(pairs: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in pairs.items():
        if value is not None:
            out += [f"--{key}", str(value)]
    return out


def _convert(cfg: TrtllmEngineBackendConfig, support: EngineSupport, example: str, model: str, out: str,
             extra: dict[str, Any]) -> list[str]:
    """convert_checkpoint.py argv in the tutorial's order: model dirs, output, dtype, then method flags."""
    dirs = {k: v for k, v in extra.items() if k.endswith("_model_dir")}
    rest = {k: v for k, v in extra.items() if k not in dirs} | ({"tp_size": cfg.tp_size} if cfg.tp_size > 1 else {})
    script = f"{cfg.app_dir}/{support.release.convert_paths[example]}"
    return ["python3", script, "--model_dir", model, *_flags(dirs), "--output_dir", out, "--dtype", cfg.dtype,
            *_flags(rest)]


def _build(cfg: TrtllmEngineBackendConfig, ckpt: str, out: str, flags: dict[str, str],
           owned: dict[str, Any]) -> list[str]:
    sizes = {"max_batch_size": cfg.max_batch_size, "max_input_len": cfg.max_input_len, "max_seq_len": cfg.max_seq_len}
    return ["trtllm-build", "--checkpoint_dir", ckpt, "--output_dir", out, *_flags(flags), *_flags(owned),
            *_flags(sizes)]


def build_commands(cfg: TrtllmEngineBackendConfig, support: EngineSupport, method: MethodConfig,
                   paths: Layout) -> list[BuildStep]:
    """convert_checkpoint + trtllm-build argv for one variant (method `none` is the base engine)."""
    base, ckpt = cfg.base_convert_example, f"{paths.work}/ckpt"
    if support.spec_mode is None:
        return [BuildStep("convert-target", _convert(cfg, support, base, paths.target, ckpt, {})),
                BuildStep("build-target", _build(cfg, ckpt, paths.engine, cfg.base_build_flags, {}))]
    mode = {"speculative_decoding_mode": support.spec_mode}
    if method.kind == "eagle":
        extra = {"eagle_model_dir": paths.draft, "max_draft_len": cfg.max_draft_len,
                 "num_eagle_layers": method.draft_length(), "max_non_leaves_per_layer": cfg.max_non_leaves_per_layer}
        return [BuildStep("convert-target", _convert(cfg, support, "eagle", paths.target, ckpt, extra)),
                BuildStep("build-target", _build(cfg, ckpt, paths.engine, cfg.build_flags, mode))]
    if method.kind == "medusa":
        extra = {"medusa_model_dir": paths.draft, "num_medusa_heads": method.draft_length()}
        owned = mode | {"max_draft_len": cfg.max_draft_len}
        return [BuildStep("convert-target", _convert(cfg, support, "medusa", paths.target, ckpt, extra)),
                BuildStep("build-target", _build(cfg, ckpt, paths.engine, cfg.build_flags, owned))]
    draft_ckpt = f"{paths.work}/draft_ckpt"
    return [BuildStep("convert-draft", _convert(cfg, support, base, paths.draft, draft_ckpt, {})),
            BuildStep("build-draft", _build(cfg, draft_ckpt, paths.draft_engine, cfg.draft_build_flags, {})),
            BuildStep("convert-target", _convert(cfg, support, base, paths.target, ckpt, {})),
            BuildStep("build-target", _build(cfg, ckpt, paths.engine, cfg.build_flags,
                                             mode | {"max_draft_len": method.draft_length()}))]


def repository_parameters(cfg: TrtllmEngineBackendConfig, method: MethodConfig,
                          paths: Layout) -> dict[str, dict[str, str]]:
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


def launch_args(cfg: TrtllmEngineBackendConfig, method: MethodConfig, ports: dict[str, int]) -> list[str]:
    """launch_triton_server.py flags (after --tritonserver): world size, repository, ports."""
    args = [f"--world_size={cfg.tp_size}", f"--model_repo={cfg.mounts.repository}"]
    if method.kind == "draft-target":
        args.append("--multi-model")
    return args + [f"--{name}_port={port}" for name, port in ports.items()]

"""Triton `config.pbtxt` built from Triton's own ModelConfig proto, never from string templates."""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from specops.triton import vllm_io

ModelConfig = mc.ModelConfig

# The vLLM backend's I/O contract (vllm_backend src/model.py auto_complete_config), restricted to
# what a text-generation client (tritonclient, genai-perf `--backend vllm`) uses.
_VLLM_INPUTS = (
    ("text_input", mc.TYPE_STRING, [1], False),
    ("stream", mc.TYPE_BOOL, [1], True),
    ("sampling_parameters", mc.TYPE_STRING, [1], True),
    ("exclude_input_in_output", mc.TYPE_BOOL, [1], True),
)
_VLLM_OUTPUTS = (("text_output", mc.TYPE_STRING, [-1]),)


def to_pbtxt(config: ModelConfig) -> str:
    """Protobuf text format of a ModelConfig (UTF-8 kept readable)."""
    return text_format.MessageToString(config, as_utf8=True)


def parse_pbtxt(text: str) -> ModelConfig:
    """Parse `config.pbtxt` text; unknown fields raise `text_format.ParseError`."""
    return text_format.Parse(text, mc.ModelConfig())


def write_pbtxt(config: ModelConfig, model_dir: Path) -> Path:
    """Write `<model_dir>/config.pbtxt` and return its path."""
    path = Path(model_dir) / "config.pbtxt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_pbtxt(config), encoding="utf-8")
    return path


def set_string_parameters(config: ModelConfig, params: Mapping[str, str]) -> ModelConfig:
    """Fill the config's `parameters` map with string values."""
    for key, value in params.items():
        if not isinstance(value, str):
            raise TypeError(f"parameter {key!r} must be a string, got {type(value).__name__}")
        config.parameters[key].string_value = value
    return config


def add_vllm_io(config: ModelConfig) -> ModelConfig:
    """Add the vLLM backend's decoupled text-generation inputs/outputs to a config."""
    for name, dtype, dims, optional in _VLLM_INPUTS:
        config.input.add(name=name, data_type=dtype, dims=dims, optional=optional)
    for name, dtype, dims in _VLLM_OUTPUTS:
        config.output.add(name=name, data_type=dtype, dims=dims)
    config.model_transaction_policy.decoupled = True
    config.max_batch_size = 0
    return config


def python_generate_config(name: str, *, model_dir: Path | str, method: str, options: Mapping[str, Any] | None = None,
                           threads: int = 1, engine: str | None = None, instances: int = 1,
                           adaptive_draft_length: bool = False, relaxed_topk: int | None = None) -> ModelConfig:
    """Config of our Python-backend generation model (`specops/runtime/triton_model.py`).

    Speaks the vLLM backend's I/O, CPU instances (each a process with its own engine), no
    Triton batching; the engine settings
    travel as string parameters. `engine` ("module:Class") overrides the decoding engine.
    """
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    config = mc.ModelConfig(name=name, backend="python")
    add_vllm_io(config)
    config.instance_group.add(kind=mc.ModelInstanceGroup.KIND_CPU, count=instances)
    params = {
        vllm_io.PARAM_MODEL_DIR: str(model_dir),
        vllm_io.PARAM_METHOD: method,
        vllm_io.PARAM_METHOD_OPTIONS: json.dumps(dict(options or {}), sort_keys=True),
        vllm_io.PARAM_THREADS: str(threads),
        vllm_io.PARAM_ADAPTIVE: "true" if adaptive_draft_length else "false",
    }
    if relaxed_topk is not None:
        params[vllm_io.PARAM_RELAXED_TOPK] = str(relaxed_topk)
    if engine:
        params[vllm_io.PARAM_ENGINE] = engine
    return set_string_parameters(config, params)

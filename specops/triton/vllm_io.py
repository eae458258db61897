"""The vLLM backend's request contract on Triton, as our Python-backend model reads it.

Pure functions (no Triton import) shared by the model file (`specops/runtime/triton_model.py`),
the config builder and the tests. Semantics follow triton-inference-server/vllm_backend
`src/utils/request.py` and vLLM's `SamplingParams` defaults.
"""
from __future__ import annotations

import json
from typing import Any

# Names of the model-config `parameters` our Python-backend model reads (string values).
PARAM_MODEL_DIR = "model_dir"
PARAM_METHOD = "method"
PARAM_METHOD_OPTIONS = "method_options"  # JSON object
PARAM_THREADS = "threads"
PARAM_ADAPTIVE = "adaptive_draft_length"  # "true": draft length chosen per step from measurements
PARAM_RELAXED_TOPK = "relaxed_topk"  # lossy acceptance: a draft within the target's top-k is kept
PARAM_ENGINE = "engine"  # "module:Class" with a DecodingEngine-like `load`; optional
DEFAULT_ENGINE = "specops.runtime.engine:DecodingEngine"

DEFAULT_MAX_TOKENS = 16  # vLLM SamplingParams.max_tokens default

# sampling_parameters keys we honour -> how to coerce them (genai-perf sends numbers as strings).
_FLOAT_KEYS = ("temperature", "top_p")
_INT_KEYS = ("top_k", "max_tokens", "seed", "min_tokens")
_BOOL_KEYS = ("ignore_eos",)
# Accepted and ignored: they do not change what a single-sequence greedy/sampled run produces.
_NOOP_KEYS = {"n": 1, "best_of": 1, "skip_special_tokens": True, "detokenize": True}


def _to_bool(value: Any) -> bool:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no", ""):
            return False
        raise ValueError(f"not a boolean: {value!r}")
    return bool(value)


def _coerce(key: str, value: Any) -> Any:
    if key in _FLOAT_KEYS:
        return float(value)
    if key in _INT_KEYS:
        return int(float(value)) if isinstance(value, str) and "." in value else int(value)
    if key in _BOOL_KEYS:
        return _to_bool(value)
    if key == "stop":
        return [value] if isinstance(value, str) else [str(s) for s in value]
    raise KeyError(key)


def parse_sampling_parameters(text: str | bytes | None) -> dict[str, Any]:
    """vLLM-style `sampling_parameters` JSON -> keyword arguments for `DecodingEngine.generate`.

    Unknown keys raise ValueError (silently ignoring e.g. `presence_penalty` would lie).
    `min_tokens` equal to `max_tokens` (what genai-perf sends for a fixed output length) becomes
    `ignore_eos=True`; a smaller non-zero `min_tokens` is refused.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    raw = json.loads(text) if text else {}
    if not isinstance(raw, dict):
        raise ValueError("sampling_parameters must be a JSON object")
    out: dict[str, Any] = {"max_tokens": DEFAULT_MAX_TOKENS}
    unknown = []
    for key, value in raw.items():
        if value is None:  # vLLM drops None values to keep its defaults
            continue
        if key in _NOOP_KEYS:
            if _coerce_noop(key, value) != _NOOP_KEYS[key]:
                raise ValueError(f"sampling parameter {key}={value!r} is not supported")
            continue
        try:
            out[key] = _coerce(key, value)
        except KeyError:
            unknown.append(key)
    if unknown:
        raise ValueError(f"unsupported sampling parameters: {sorted(unknown)}")
    _fold_min_tokens(out)
    if out.get("top_k", 0) < 0:  # vLLM spells "disabled" as -1, the engine as 0
        out["top_k"] = 0
    if out["max_tokens"] < 1:
        raise ValueError(f"max_tokens must be >= 1, got {out['max_tokens']}")
    return out


def _coerce_noop(key: str, value: Any) -> Any:
    default = _NOOP_KEYS[key]
    return _to_bool(value) if isinstance(default, bool) else int(value)


def _fold_min_tokens(out: dict[str, Any]) -> None:
    min_tokens = out.pop("min_tokens", 0)
    if min_tokens <= 0:
        return
    if min_tokens < out["max_tokens"]:
        raise ValueError(
            f"min_tokens={min_tokens} < max_tokens={out['max_tokens']} is not supported "
            "(only min_tokens == max_tokens, i.e. a fixed output length)"
        )
    out["ignore_eos"] = True


def prepend_prompt(stream: bool, exclude_input_in_output: bool | None) -> bool:
    """Whether the prompt is prepended to the output, as the vLLM backend decides it.

    Absent `exclude_input_in_output`: prepend when not streaming. Streaming with
    `exclude_input_in_output=False` is an error there too.
    """
    if exclude_input_in_output is not None:
        prepend = not exclude_input_in_output
    else:
        prepend = not stream
    if prepend and stream:
        raise ValueError("When streaming, `exclude_input_in_output` = False is not allowed.")
    return prepend

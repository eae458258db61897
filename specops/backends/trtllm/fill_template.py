"""Parameter sets for tensorrtllm_backend's `tools/fill_template.py`, and its argv.

The repository is filled by the container's own script (`python3 /app/tools/fill_template.py
-i <model>/config.pbtxt key:value,...`); specops only computes the sets, one per model of
`inflight_batcher_llm`. Keys and values follow the Triton tutorial's engine recipe
(triton-inference-server/tutorials Feature_Guide/Speculative_Decoding/TRT-LLM/README.md, the
EAGLE/Medusa/base sections) and, for draft-target, TensorRT-LLM
examples/draft_target_model/README.md ("Triton Inference Server workflow").

One deliberate difference from the tutorial: it also passes `tokenizer_type:auto` to
preprocessing/postprocessing, a key the current templates no longer have (fill_template
ignores unknown keys through `safe_substitute`); specops leaves it out so every key it passes
exists in the template it fills.

`parse_substitutions` reads an argv's `key:value,...` back the way the script splits it
(escaped split on `,` and `:`), so the validation can check every key against its template.
"""
from __future__ import annotations

import re

MODELS = ("preprocessing", "postprocessing", "tensorrt_llm", "tensorrt_llm_bls", "ensemble")
DRAFT_MODEL = "tensorrt_llm_draft"  # a copy of tensorrt_llm serving the draft engine (draft-target)
TEMPLATE_OF = {m: m for m in MODELS} | {DRAFT_MODEL: "tensorrt_llm"}


def choices_value(choices: list[list[int]]) -> str:
    """A choices tree as the backend's model config expects it: "{0, 0, 0}, {0, 1}"
    (tensorrtllm_backend docs/model_config.md, medusa_choices / eagle_choices)."""
    return ", ".join("{" + ", ".join(str(int(i)) for i in path) + "}" for path in choices)


def _escape(text: str) -> str:
    """Escape a value for the script's two splitting passes: first on ',' (which consumes one
    level of backslashes), then each pair on ':'. So ',' needs one level, ':' and '\\' two."""
    once = text.replace("\\", "\\\\").replace(":", "\\:")  # survives the ',' pass as \\ and \:
    return re.sub(r"([\\,:])", r"\\\1", once)


def substitutions_arg(params: dict[str, str]) -> str:
    """The script's second argument: key:value pairs joined by commas, values escaped (see _escape)."""
    for key in params:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ValueError(f"fill_template key {key!r} is not a template identifier")
    return ",".join(f"{key}:{_escape(str(value))}" for key, value in params.items())


def fill_command(script: str, config_path: str, params: dict[str, str]) -> list[str]:
    """argv that fills one config.pbtxt in place with the container's fill_template.py."""
    return ["python3", script, "-i", config_path, substitutions_arg(params)]


def parameter_sets(
    triton,  # TrtllmEngineBackendConfig.triton
    *,
    max_batch_size: int,
    engine_dir: str,
    tokenizer_dir: str,
    choices: tuple[str, list[list[int]]] | None = None,  # ("eagle_choices" | "medusa_choices", tree)
    draft_engine_dir: str | None = None,  # draft-target: the draft engine, served as tensorrt_llm_draft
) -> dict[str, dict[str, str]]:
    """One fill_template parameter set per model of the repository, in the tutorial's order."""
    # the tutorial's spelling of a boolean (DECOUPLED_MODE=false)
    batch, decoupled = str(max_batch_size), "true" if triton.decoupled_mode else "false"
    count, logits = str(triton.instance_count), triton.logits_datatype
    sets: dict[str, dict[str, str]] = {
        "preprocessing": {"tokenizer_dir": tokenizer_dir, "triton_max_batch_size": batch,
                          "preprocessing_instance_count": count},
        "postprocessing": {"tokenizer_dir": tokenizer_dir, "triton_max_batch_size": batch,
                           "postprocessing_instance_count": count},
        "tensorrt_llm_bls": {"triton_max_batch_size": batch, "decoupled_mode": decoupled,
                             "bls_instance_count": count, "logits_datatype": logits},
        "ensemble": {"triton_max_batch_size": batch, "logits_datatype": logits},
    }
    engine = {"triton_backend": triton.triton_backend, "triton_max_batch_size": batch, "decoupled_mode": decoupled,
              "engine_dir": engine_dir, "max_queue_delay_microseconds": str(triton.max_queue_delay_microseconds),
              "batching_strategy": triton.batching_strategy,
              "encoder_input_features_data_type": triton.encoder_input_features_data_type,
              "logits_datatype": logits}
    if triton.kv_cache_free_gpu_mem_fraction is not None:
        engine["kv_cache_free_gpu_mem_fraction"] = f"{triton.kv_cache_free_gpu_mem_fraction:g}"
    if draft_engine_dir is not None:
        # examples/draft_target_model/README.md: block reuse is required; the BLS names both models.
        engine["enable_kv_cache_reuse"] = "true"
        sets["tensorrt_llm_bls"] |= {"accumulate_tokens": "false", "tensorrt_llm_model_name": "tensorrt_llm",
                                     "tensorrt_llm_draft_model_name": DRAFT_MODEL}
    sets["tensorrt_llm"] = dict(engine)
    if choices is not None:
        key, tree = choices
        sets["tensorrt_llm"][key] = choices_value(tree)
    if draft_engine_dir is not None:
        sets[DRAFT_MODEL] = engine | {"engine_dir": draft_engine_dir}
    for model, extra in triton.extra.items():
        if model not in sets:
            raise ValueError(f"triton.extra names model {model!r}; this repository has {', '.join(sets)}")
        sets[model] = sets[model] | extra
    return sets


# --- the script's own split, read back -------------------------------------------------------
def _split(text: str, delimiter: str) -> list[str]:
    """fill_template.split: split on delimiter, a backslash escapes the next character."""
    out, current, escape = [], "", False
    for char in text:
        if escape:
            current, escape = current + char, False
        elif char == delimiter:
            out.append(current)
            current = ""
        elif char == "\\":
            escape = True
        else:
            current += char
    out.append(current)
    return out


def parse_substitutions(arg: str) -> dict[str, str]:
    out = {}
    for pair in _split(arg, ","):
        key, value = _split(pair, ":")  # more than one unescaped ':' fails here as in the script
        out[key] = value
    return out

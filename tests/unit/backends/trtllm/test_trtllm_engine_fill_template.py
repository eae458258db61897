"""fill_template parameter sets against the upstream inflight_batcher_llm templates.

Templates: /work/shared/reference/tensorrtllm_backend/inflight_batcher_llm/<model>/config.pbtxt
(triton-inference-server/tensorrtllm_backend c1e19638, see ../shared/reference/SOURCES.txt).
Seed: triton-inference-server/tutorials Feature_Guide/Speculative_Decoding/TRT-LLM/README.md,
"Serving with Triton" step 2 (EAGLE), the Medusa section and "Run Gen-AI Perf on Base Model":
the fill_template.py lines below list the keys the seed fills, per template.
"""
from __future__ import annotations

import re
from string import Template

import pytest

from specops.backends.trtllm.engine_commands import layout, repository_parameters
from specops.backends.trtllm.engine_config import TrtllmEngineBackendConfig
from specops.backends.trtllm.fill_template import (
    TEMPLATE_OF,
    choices_value,
    parse_substitutions,
    substitutions_arg,
)
from specops.methods import METHODS
from tests.reference import REFERENCE

TEMPLATES = REFERENCE / "tensorrtllm_backend" / "inflight_batcher_llm"
IMAGE = "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3"

# The keys the seed's fill_template.py calls fill (tokenizer_type is listed separately: the seed
# passes it, the current templates have no such placeholder).
def fill_text(template: str, arg: str) -> str:
    """What the container's fill_template.py writes for `template` given the substitutions argument `arg`:
    the script's split, then string.Template.safe_substitute (no container needed)."""
    return Template(template).safe_substitute(parse_substitutions(arg))


def template_keys(template: str) -> set[str]:
    return set(Template(template).get_identifiers())


def unfilled(text: str, keys: set[str]) -> set[str]:
    """Placeholders among `keys` still present after filling."""
    return set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", text)) & keys


SEED_FILLED = {
    "preprocessing": {"tokenizer_dir", "triton_max_batch_size", "preprocessing_instance_count"},
    "postprocessing": {"tokenizer_dir", "triton_max_batch_size", "postprocessing_instance_count"},
    "tensorrt_llm_bls": {"triton_max_batch_size", "decoupled_mode", "bls_instance_count", "logits_datatype"},
    "ensemble": {"triton_max_batch_size", "logits_datatype"},
    "tensorrt_llm": {"triton_backend", "triton_max_batch_size", "decoupled_mode", "engine_dir",
                     "max_queue_delay_microseconds", "batching_strategy", "encoder_input_features_data_type",
                     "logits_datatype"},
}
SEED_ONLY_KEYS = {"preprocessing": {"tokenizer_type"}, "postprocessing": {"tokenizer_type"}}

CASES = {
    "eagle": ({"kind": "eagle", "num_speculative_tokens": 4}, {"max_draft_len": 63}),
    "eagle-choices": ({"kind": "eagle", "num_speculative_tokens": 3},
                      {"max_draft_len": 63, "eagle_choices": [[0, 0, 0], [0, 1]]}),
    "medusa": ({"kind": "medusa", "num_speculative_tokens": 4}, {}),
    "medusa-choices": ({"kind": "medusa", "num_speculative_tokens": 4, "medusa_choices": [[0], [0, 0], [1]]}, {}),
    "base": ({"kind": "none"}, {}),
    "draft-target": ({"kind": "draft-target", "num_speculative_tokens": 4}, {}),
}


def _sets(case: str):
    method_doc, backend = CASES[case]
    method = METHODS.get(method_doc["kind"])(**method_doc)
    cfg = TrtllmEngineBackendConfig(kind="trtllm-engine", image=IMAGE, **backend)
    return repository_parameters(cfg, method, layout(cfg, method.speculative))


def _template(model: str) -> str:
    return (TEMPLATES / TEMPLATE_OF[model] / "config.pbtxt").read_text()


@pytest.mark.parametrize("case", CASES)
def test_every_key_exists_in_its_upstream_template(case):
    for model, params in _sets(case).items():
        missing = set(params) - template_keys(_template(model))
        assert not missing, f"{case}/{model}: {missing} are not ${{...}} placeholders of {TEMPLATE_OF[model]}"


@pytest.mark.parametrize("case", CASES)
def test_filling_leaves_no_placeholder_in_the_fields_the_seed_filled(case):
    for model, params in _sets(case).items():
        seed_keys = SEED_FILLED[TEMPLATE_OF[model]]
        assert seed_keys <= set(params), f"{model}: the seed also fills {seed_keys - set(params)}"
        filled = fill_text(_template(model), substitutions_arg(params))
        assert unfilled(filled, seed_keys) == set()
        assert unfilled(filled, set(params)) == set()


def test_seed_only_tokenizer_type_is_not_a_template_key():
    for model, keys in SEED_ONLY_KEYS.items():
        assert not keys & template_keys(_template(model))
        assert not keys & set(_sets("eagle")[model])


def test_seed_values():
    sets = _sets("eagle")
    assert sets["tensorrt_llm"] | {"engine_dir": "E"} == {
        "triton_backend": "tensorrtllm", "triton_max_batch_size": "4", "decoupled_mode": "false", "engine_dir": "E",
        "max_queue_delay_microseconds": "10000", "batching_strategy": "inflight_fused_batching",
        "encoder_input_features_data_type": "TYPE_FP16", "logits_datatype": "TYPE_FP32"}
    assert sets["ensemble"] == {"triton_max_batch_size": "4", "logits_datatype": "TYPE_FP32"}
    assert sets["tensorrt_llm_bls"] == {"triton_max_batch_size": "4", "decoupled_mode": "false",
                                        "bls_instance_count": "1", "logits_datatype": "TYPE_FP32"}


def test_eagle_choices_rendered_as_the_backend_expects():
    # tensorrtllm_backend docs/model_config.md: eagle_choices "in the format of e.g. "{0, 0, 0}, {0, 1}""
    params = _sets("eagle-choices")["tensorrt_llm"]
    assert params["eagle_choices"] == "{0, 0, 0}, {0, 1}"
    filled = fill_text(_template("tensorrt_llm"), substitutions_arg(params))
    assert 'string_value: "{0, 0, 0}, {0, 1}"' in filled
    assert "medusa_choices" not in params and "${medusa_choices}" in filled  # left for the backend's default


def test_medusa_choices_rendered_and_absent_by_default():
    params = _sets("medusa-choices")["tensorrt_llm"]
    assert params["medusa_choices"] == "{0}, {0, 0}, {1}"
    filled = fill_text(_template("tensorrt_llm"), substitutions_arg(params))
    assert 'string_value: "{0}, {0, 0}, {1}"' in filled
    assert "medusa_choices" not in _sets("medusa")["tensorrt_llm"]  # seed: mc_sim_7b_63 default


def test_draft_target_sets_name_both_engines():
    # TensorRT-LLM examples/draft_target_model/README.md, "Triton Inference Server workflow"
    sets = _sets("draft-target")
    assert sets["tensorrt_llm_bls"]["tensorrt_llm_draft_model_name"] == "tensorrt_llm_draft"
    assert sets["tensorrt_llm_draft"]["engine_dir"].endswith("draft_engine")
    assert sets["tensorrt_llm"]["enable_kv_cache_reuse"] == "true"


def test_substitutions_escape_round_trip():
    params = {"eagle_choices": choices_value([[0, 1], [2]]), "tokenizer_dir": "/a:b\\c"}
    assert parse_substitutions(substitutions_arg(params)) == params
    with pytest.raises(ValueError):
        substitutions_arg({"bad-key": "x"})

"""Backend `trtllm` (LLM API): model.yaml against the llmapi template, refusals, genai-perf inputs,
perf-metrics parsing, seed values, plan.

Seed: triton-inference-server/tutorials Feature_Guide/Speculative_Decoding/TRT-LLM (LLM API / PyTorch
backend): Llama-3.1-8B-Instruct + yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, max_draft_len 3; draft/target
max_draft_len 3; docker run --rm -it --net host --shm-size=2g --ulimit memlock=-1
--ulimit stack=67108864 --gpus all -v ~/.cache/huggingface:/root/.cache/huggingface.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specops.profile.errors import ProfileError
import yaml

import genai_perf.inputs.converters.tensorrtllm_converter as trt_converter
from specops.backends.base import Variant, variants_of
from specops.backends.trtllm import (
    GENAI_PERF_INPUTS, MODEL, TrtllmBackend, acceptance_from, config_addendum, genai_perf_extra_inputs,
    parse_perf_metrics,
)
from specops.triton.model_config import parse_pbtxt

from tests.reference import REFERENCE

LLMAPI = REFERENCE / "tensorrtllm_backend" / "llmapi" / "tensorrt_llm"


def _files(profile, variant_name="speculative"):
    variant = {v.name: v for v in variants_of(profile)}[variant_name]
    return TrtllmBackend(profile).files(variant, None, None)


def _model_yaml(profile, variant_name="speculative") -> dict:
    return yaml.safe_load(_files(profile, variant_name)[f"{MODEL}/1/model.yaml"])


def test_model_yaml_keys_match_the_llmapi_template(load_gpu_profile):
    ref = yaml.safe_load((LLMAPI / "1" / "model.yaml").read_text())
    ours = _model_yaml(load_gpu_profile("eagle3-trtllm"))
    # pytorch_backend_config (use_cuda_graph) is left out on purpose: TRT-LLM >= 1.0 rejects it.
    assert set(ref) - {"pytorch_backend_config"} <= set(ours)
    for key in set(ref) & set(ours):
        assert type(ours[key]) is type(ref[key]), key
    assert ours["backend"] == ref["backend"] == "pytorch"
    assert set(ours["triton_config"]) == set(ref["triton_config"]) == {"max_batch_size", "decoupled"}
    assert ours["triton_config"] == {"max_batch_size": 0, "decoupled": False}
    assert ours["speculative_config"] == {"decoding_type": "Eagle3", "max_draft_len": 3,
                                          "speculative_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}
    assert list(ours)[:4] == ["model", "backend", "tensor_parallel_size", "pipeline_parallel_size"]


@pytest.mark.parametrize("profile_name, overrides, expected", [
    ("draft-target-trtllm", (), {"decoding_type": "DraftTarget", "max_draft_len": 3,
                                 "speculative_model": "meta-llama/Llama-3.2-1B-Instruct"}),
    ("eagle3-trtllm", ("backend.draft_key=speculative_model_dir",),
     {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model_dir": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}),
    ("eagle3-trtllm", ("method={kind: ngram, num_speculative_tokens: 4, prompt_lookup_max: 3}", "draft=null"),
     {"decoding_type": "NGram", "max_draft_len": 4, "max_matching_ngram_size": 3}),
])
def test_speculative_config_per_method(load_gpu_profile, profile_name, overrides, expected):
    assert _model_yaml(load_gpu_profile(profile_name, overrides))["speculative_config"] == expected


def test_base_variant_omits_speculative_config(load_gpu_profile):
    # Tutorial step "Run Gen-AI Perf on Base Model": the same model.yaml without speculative_config.
    ours = _model_yaml(load_gpu_profile("eagle3-trtllm"), "base")
    assert "speculative_config" not in ours and ours["model"] == "meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.parametrize("method", ["medusa", "eagle"])
def test_medusa_and_eagle1_refused_at_validation_pointing_to_trtllm_engine(load_gpu_profile, method):
    with pytest.raises(ProfileError, match=r"not supported by backend 'trtllm'.*trtllm-engine"):
        load_gpu_profile("eagle3-trtllm", (f"method.kind={method}",))


def test_genai_perf_inputs_are_declared_by_template_plus_addendum():
    # genai-perf 0.0.16 TensorRTLLMConverter payload keys (installed package source).
    source = Path(trt_converter.__file__).read_text()
    sent = {"max_tokens", "exclude_input_in_output", "stream", "min_length"}
    assert all(f'"{k}"' in source for k in sent)
    template = parse_pbtxt((LLMAPI / "config.pbtxt").read_text())
    declared = {i.name for i in template.input}
    assert not sent & declared  # the mismatch the addendum exists for
    combined = parse_pbtxt((LLMAPI / "config.pbtxt").read_text() + config_addendum(decoupled=True))
    names = [i.name for i in combined.input]
    assert sent <= set(names) and len(names) == len(set(names))
    assert {n for n, _ in GENAI_PERF_INPUTS} == sent
    assert combined.model_transaction_policy.decoupled and combined.name == "tensorrt_llm"
    assert not parse_pbtxt((LLMAPI / "config.pbtxt").read_text() + config_addendum(False)).model_transaction_policy.decoupled


def test_extra_inputs_feed_the_sampling_params_the_template_declares(load_gpu_profile):
    declared = {i.name for i in parse_pbtxt((LLMAPI / "config.pbtxt").read_text()).input}
    extra = genai_perf_extra_inputs(load_gpu_profile("eagle3-trtllm").backend, 256)
    assert extra["sampling_param_max_tokens"] == 256
    assert set(extra) <= declared
    streaming = genai_perf_extra_inputs(load_gpu_profile("eagle3-trtllm", ("backend.decoupled=true",)).backend, 8)
    assert streaming["streaming"] is True


def test_perf_metrics_parsed_from_the_documented_shapes():
    # Shapes from upstream triton_backend/all_models/llmapi/tensorrt_llm/config.pbtxt (TRT-LLM):
    # acceptance_rate TYPE_FP32 [1], total_accepted_draft_tokens / total_draft_tokens TYPE_INT32 [1];
    # tutorial: "sampling_param_return_perf_metrics": true adds acceptance_rate, total_accepted_draft_tokens,
    # total_draft_tokens to the response. model.py may send them as strings: both forms parse.
    numeric = {"text_output": np.array([b"x"], dtype=object), "acceptance_rate": np.array([0.5], np.float32),
               "total_accepted_draft_tokens": np.array([6], np.int32), "total_draft_tokens": np.array([12], np.int32)}
    strings = {"total_accepted_draft_tokens": np.array([b"4"], dtype=object),
               "total_draft_tokens": np.array([b"6"], dtype=object)}
    assert parse_perf_metrics(numeric) == (6.0, 12.0)
    assert parse_perf_metrics(strings) == (4.0, 6.0)
    assert parse_perf_metrics({"text_output": np.array([b"x"], dtype=object)}) is None
    acc = acceptance_from([(6.0, 12.0), (4.0, 6.0)], max_draft_len=3)
    assert (acc.num_drafts, acc.num_draft_tokens, acc.num_accepted_tokens) == (6.0, 18.0, 10.0)
    assert "return_perf_metrics" in acc.source


def test_profiles_carry_the_seed_values(load_gpu_profile):
    eagle3, dt = load_gpu_profile("eagle3-trtllm"), load_gpu_profile("draft-target-trtllm")
    assert (eagle3.target.source, eagle3.draft.source) == ("hf://meta-llama/Llama-3.1-8B-Instruct",
                                                           "hf://yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    assert dt.target.source == "hf://meta-llama/Llama-3.1-8B-Instruct"
    assert eagle3.method.num_speculative_tokens == dt.method.num_speculative_tokens == 3
    for profile in (eagle3, dt):
        assert profile.backend.image.endswith("-trtllm-python-py3")
        assert (profile.backend.tensor_parallel_size, profile.backend.pipeline_parallel_size) == (1, 1)
        steps = TrtllmBackend(profile).plan(Variant("speculative", profile.method), None, None)
        line = steps[1].commands[0]
        for flag in ("--network host", "--shm-size=2g", "--ulimit memlock=-1", "--ulimit stack=67108864", "--gpus all",
                     ":/root/.cache/huggingface", "cp -R /app/all_models/llmapi/ /opt/tritonserver/llmapi_repo/",
                     "python3 /app/scripts/launch_triton_server.py --model_repo=/opt/tritonserver/llmapi_repo/"):
            assert flag in line, flag


def test_plan_lists_the_docker_line_in_container_steps_and_files(load_gpu_profile):
    profile = load_gpu_profile("draft-target-trtllm")
    steps = TrtllmBackend(profile).plan(Variant("speculative", profile.method), None, None)
    files = {k: v for s in steps for k, v in s.files.items()}
    assert "decoding_type: DraftTarget" in files["repository/tensorrt_llm/1/model.yaml"]
    assert "repository/specops-config-addendum.pbtxt" in files
    commands = [c for s in steps for c in s.commands]
    assert commands[0].startswith("docker run") and "nvcr.io/nvidia/tritonserver:" in commands[0]
    assert any(c.startswith("(in container) cp -R /app/all_models/llmapi/") for c in commands)
    assert "--extra-inputs sampling_param_max_tokens:256" in commands

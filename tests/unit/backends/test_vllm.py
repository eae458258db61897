"""Backend `vllm`: model.json / config.pbtxt against the Triton tutorial's files, seed values, plan.

Seed: triton-inference-server/tutorials Feature_Guide/Speculative_Decoding/vLLM (README and
model_repository/{base_model,eagle_model,opt_model}, copies in /work/shared/reference/tutorials_vllm).
"""
from __future__ import annotations

import json

import pytest

from specops.profile.errors import ProfileError

from specops.backends.base import Variant, variants_of
from specops.backends.vllm import VllmBackend, parse_acceptance
from specops.triton.model_config import mc, parse_pbtxt

from tests.reference import REFERENCE

TUTORIAL = REFERENCE / "tutorials_vllm"
MODERN = ("backend.legacy_keys=false", "backend.image=nvcr.io/nvidia/tritonserver:25.12-vllm-python-py3")


def _files(profile, variant_name: str) -> dict[str, str]:
    variant = {v.name: v for v in variants_of(profile)}[variant_name]
    return VllmBackend(profile).files(variant, None, None)


def _model_json(profile, variant_name: str) -> dict:
    return json.loads(_files(profile, variant_name)[f"{variant_name}/1/model.json"])


@pytest.mark.parametrize("profile_name, variant, reference", [
    ("eagle-vllm", "speculative", "eagle_model"),
    ("eagle-vllm", "base", "base_model"),
    ("draft-target-vllm", "speculative", "opt_model"),
])
def test_legacy_keys_reproduce_the_tutorial_model_json(load_gpu_profile, profile_name, variant, reference):
    expected = json.loads((TUTORIAL / reference / "1" / "model.json").read_text())
    got = _model_json(load_gpu_profile(profile_name), variant)
    assert got == expected
    assert list(got) == list(expected)  # same key order as the tutorial


def test_config_pbtxt_matches_the_tutorial_backend_and_instance_group(load_gpu_profile):
    ours = parse_pbtxt(_files(load_gpu_profile("eagle-vllm"), "speculative")["speculative/config.pbtxt"])
    for reference in ("base_model", "eagle_model", "opt_model"):
        ref = parse_pbtxt((TUTORIAL / reference / "config.pbtxt").read_text())
        assert ours.backend == ref.backend == "vllm"
        assert list(ours.instance_group) == list(ref.instance_group)
    assert ours.instance_group[0].kind == mc.ModelInstanceGroup.KIND_MODEL and ours.instance_group[0].count == 1
    assert ours.parameters["REPORT_CUSTOM_METRICS"].string_value == "true"


@pytest.mark.parametrize("overrides, expected", [
    (("method.kind=eagle",), {"method": "eagle", "model": "/hf-models/EAGLE-LLaMA3-Instruct-8B",
                              "num_speculative_tokens": 5, "draft_tensor_parallel_size": 1}),
    (("method.kind=eagle3",), {"method": "eagle3", "model": "/hf-models/EAGLE-LLaMA3-Instruct-8B",
                               "num_speculative_tokens": 5, "draft_tensor_parallel_size": 1}),
    (("method.kind=draft-target",), {"method": "draft_model", "model": "/hf-models/EAGLE-LLaMA3-Instruct-8B",
                                     "num_speculative_tokens": 5, "draft_tensor_parallel_size": 1}),
    (("method.kind=medusa", "method.num_speculative_tokens=4"),
     {"method": "medusa", "model": "/hf-models/EAGLE-LLaMA3-Instruct-8B", "num_speculative_tokens": 4,
      "draft_tensor_parallel_size": 1}),
    (("method={kind: ngram, num_speculative_tokens: 4, prompt_lookup_min: 2, prompt_lookup_max: 3}", "draft=null"),
     {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 2}),
])
def test_nested_speculative_config_per_method(load_gpu_profile, overrides, expected):
    args = _model_json(load_gpu_profile("eagle-vllm", MODERN + overrides), "speculative")
    assert args["model"] == "/hf-models/Meta-Llama-3-8B-Instruct"
    assert args["speculative_config"] == expected
    assert not {"speculative_model", "num_speculative_tokens"} & set(args)


def test_base_variant_has_no_speculation_and_hub_ids_in_hub_mode(load_gpu_profile):
    profile = load_gpu_profile("draft-target-vllm", MODERN)
    assert _model_json(profile, "base") == {"model": "facebook/opt-6.7b", "tensor_parallel_size": 1}
    assert _model_json(profile, "speculative")["speculative_config"] == {
        "method": "draft_model", "model": "facebook/opt-125m", "num_speculative_tokens": 5}


def test_eagle1_refused_on_containers_older_than_25_03(load_gpu_profile):
    """Refused when the profile loads, before anything is downloaded."""
    with pytest.raises(ProfileError, match=r"backend: EAGLE-1 checkpoints need converting .* older than 25.03 \(vLLM < 0.7.3\)"):
        load_gpu_profile("eagle-vllm", ("backend.image=nvcr.io/nvidia/tritonserver:25.02-vllm-python-py3",))


def test_eagle3_has_no_legacy_keys(load_gpu_profile):
    with pytest.raises(ProfileError, match="no legacy flat keys"):
        load_gpu_profile("eagle-vllm", ("method.kind=eagle3",))


def test_engine_args_may_not_override_what_specops_writes(load_gpu_profile):
    with pytest.raises(Exception, match="engine_args may not set model"):
        load_gpu_profile("eagle-vllm", ("backend.engine_args={model: x}",))


def test_profiles_carry_the_seed_values(load_gpu_profile):
    # Seed: vLLM README "EAGLE" (EAGLE-LLaMA3-Instruct-8B + Meta-Llama-3-8B-Instruct, num_speculative_tokens 5,
    # mounted at /hf-models) and "Draft Model-Based" (opt_model: opt-6.7b + opt-125m, 5 tokens, 25.02 tag);
    # docker flags: --gpus all --net=host --shm-size=1G --ulimit memlock=-1 --ulimit stack=67108864.
    eagle, opt = load_gpu_profile("eagle-vllm"), load_gpu_profile("draft-target-vllm")
    assert (eagle.target.source, eagle.draft.source) == ("hf://meta-llama/Meta-Llama-3-8B-Instruct",
                                                         "hf://yuhuili/EAGLE-LLaMA3-Instruct-8B")
    assert (opt.target.source, opt.draft.source) == ("hf://facebook/opt-6.7b", "hf://facebook/opt-125m")
    assert eagle.method.kind == "eagle" and opt.method.kind == "draft-target"
    assert eagle.method.num_speculative_tokens == opt.method.num_speculative_tokens == 5
    assert opt.backend.image == "nvcr.io/nvidia/tritonserver:25.02-vllm-python-py3"
    assert eagle.backend.image.endswith("-vllm-python-py3") and eagle.backend.mount_root == "/hf-models"
    assert eagle.benchmark.concurrency == opt.benchmark.concurrency == 1
    for profile in (eagle, opt):
        line = " ".join(VllmBackend(profile).plan(Variant("speculative", profile.method), None, None)[1].commands)
        for flag in ("--gpus all", "--network host", "--shm-size=1G", "--ulimit memlock=-1",
                     "--ulimit stack=67108864", ":/model_repository", "--model-control-mode=explicit",
                     "--load-model=speculative", "-e HF_TOKEN"):
            assert flag in line, flag


def test_plan_lists_the_docker_line_and_every_file(load_gpu_profile):
    profile = load_gpu_profile("eagle-vllm")
    steps = VllmBackend(profile).plan(Variant("speculative", profile.method), None, None)
    files = {k: v for s in steps for k, v in s.files.items()}
    assert {"repository/speculative/config.pbtxt", "repository/speculative/1/model.json"} <= set(files)
    commands = [c for s in steps for c in s.commands]
    assert any(c.startswith("docker run") and "nvcr.io/nvidia/tritonserver:25.03-vllm-python-py3 tritonserver"
               in c and ":/hf-models/EAGLE-LLaMA3-Instruct-8B:ro" in c for c in commands)


def test_acceptance_from_vllm_spec_decode_counters():
    # Names as vLLM documents its Prometheus metrics (docs "Metrics": vllm:spec_decode_num_drafts,
    # vllm:spec_decode_num_draft_tokens, vllm:spec_decode_num_accepted_tokens, counters with _total).
    text = "\n".join([
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        'vllm:spec_decode_num_drafts_total{model_name="speculative"} 10.0',
        'vllm:spec_decode_num_draft_tokens_total{model_name="speculative"} 50.0',
        'vllm:spec_decode_num_accepted_tokens_total{model_name="speculative"} 35.0',
    ])
    acc = parse_acceptance(text)
    assert (acc.num_drafts, acc.num_draft_tokens, acc.num_accepted_tokens) == (10.0, 50.0, 35.0)
    assert acc.acceptance_rate == 0.7 and acc.mean_accepted_per_step == 4.5
    assert parse_acceptance('nv_inference_count{model="base"} 3\n') is None

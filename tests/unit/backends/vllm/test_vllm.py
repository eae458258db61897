"""Backend `vllm`: model.json / config.pbtxt rendered for the vLLM inside each image, the tutorial's
files reproduced, refusals at load naming the versions, plan.

Seed: triton-inference-server/tutorials Feature_Guide/Speculative_Decoding/vLLM (README and
model_repository/{base_model,eagle_model,opt_model}, copies in /work/shared/reference/tutorials_vllm).
Version facts: specops/versions/data/{images,vllm,triton_vllm}.yaml.
"""
from __future__ import annotations

import json

import pytest

from specops.pipeline.backend import backend_for
from specops.profile.errors import ProfileError
from specops.run.variant import Variant, variants_of
from specops.triton.model_config import mc, parse_pbtxt
from specops.versions.vllm import vllm_releases
from tests.reference import REFERENCE

TUTORIAL = REFERENCE / "tutorials_vllm"
IMAGE = "nvcr.io/nvidia/tritonserver:{}-vllm-python-py3"


def _files(profile, variant_name: str) -> dict[str, str]:
    variant = {v.name: v for v in variants_of(profile.method, profile.comparison.baseline)}[variant_name]
    return backend_for(profile).all_files(variant, None, None)


def _model_json(profile, variant_name: str) -> dict:
    return json.loads(_files(profile, variant_name)[f"{variant_name}/1/model.json"])


@pytest.mark.parametrize("profile_name, variant, reference", [
    ("eagle-vllm", "speculative", "eagle_model"),
    ("eagle-vllm", "base", "base_model"),
    ("draft-target-vllm", "speculative", "opt_model"),
])
def test_seed_profiles_reproduce_the_tutorial_model_json(load_gpu_profile, profile_name, variant, reference):
    expected = json.loads((TUTORIAL / reference / "1" / "model.json").read_text())
    got = _model_json(load_gpu_profile(profile_name), variant)
    assert got == expected
    assert list(got) == list(expected)  # same key order as the tutorial


def test_config_pbtxt_is_the_tutorials(load_gpu_profile):
    ours = parse_pbtxt(_files(load_gpu_profile("eagle-vllm"), "speculative")["speculative/config.pbtxt"])
    for reference in ("base_model", "eagle_model", "opt_model"):
        ref = parse_pbtxt((TUTORIAL / reference / "config.pbtxt").read_text())
        assert ours.backend == ref.backend == "vllm"
        assert list(ours.instance_group) == list(ref.instance_group)
        assert dict(ours.parameters) == dict(ref.parameters) == {}
    assert ours.instance_group[0].kind == mc.ModelInstanceGroup.KIND_MODEL and ours.instance_group[0].count == 1


@pytest.mark.parametrize("release, nested", [("25.02", False), ("25.03", False), ("25.04", False), ("25.05", True),
                                             ("26.02", True)])
def test_the_image_decides_flat_or_nested_keys(load_gpu_profile, release, nested):
    """vLLM <= 0.8.1 takes only the flat speculative_model keys, 0.8.4 on only speculative_config."""
    args = _model_json(load_gpu_profile("draft-target-vllm", (f"backend.image={IMAGE.format(release)}",)),
                       "speculative")
    assert ("speculative_config" in args) is nested
    assert ("speculative_model" in args) is not nested


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
    (("method={kind: suffix, num_speculative_tokens: 8, max_tree_depth: 16, min_token_prob: 0.2}", "draft=null"),
     {"method": "suffix", "num_speculative_tokens": 8, "suffix_decoding_max_tree_depth": 16,
      "suffix_decoding_max_cached_requests": 0, "suffix_decoding_max_spec_factor": 1.0,
      "suffix_decoding_min_token_prob": 0.2}),
])
def test_nested_speculative_config_per_method(load_gpu_profile, overrides, expected):
    args = _model_json(load_gpu_profile("eagle-vllm-nested", overrides), "speculative")
    assert args["model"] == "/hf-models/Meta-Llama-3-8B-Instruct"
    assert args["speculative_config"] == expected


def test_eagle1_draft_mount_says_eagle_for_vllms_path_detection(load_gpu_profile):
    """vLLM <= 0.8.x tells an EAGLE-1 draft by 'eagle-' in its path: a draft named otherwise is mounted so."""
    profile = load_gpu_profile("eagle-vllm", ("draft.source=hf://org/llama3-head",))
    assert _model_json(profile, "speculative")["speculative_model"] == "/hf-models/EAGLE-llama3-head"


@pytest.mark.parametrize("overrides, field, needles", [
    # a newer method on an older image: the image, its vLLM and the first version that has it
    (("method.kind=eagle3",), "method.kind", ["25.03", "vLLM 0.7.3", "no speculative method 'eagle3'",
                                              "first in vLLM 0.9.2"]),
    ((f"backend.image={IMAGE.format('25.02')}",), "backend.image", ["vLLM 0.7.0", "from vLLM 0.7.3"]),
    (("method={kind: suffix}", "draft=null"), "method.kind", ["vLLM 0.7.3", "no speculative method 'suffix'",
                                                          "first in vLLM 0.11.1"]),
    ((f"backend.image={IMAGE.format('25.12')}", "method.kind=draft-target"), "method.kind",
     ["vLLM 0.11.1", "NotImplementedError", "vllm/config/speculative.py", "runs from vLLM 0.15.1"]),
    ((f"backend.image={IMAGE.format('25.08')}", "method.kind=eagle3"), "method.kind",
     ["vLLM 0.9.2", "V0 engine under Triton's vllm_backend", "V0 has no EAGLE-3"]),
    (("backend.engine_args={enable_prefix_caching_v2: true}",), "backend.engine_args",
     ["vLLM 0.7.3", "no engine arg enable_prefix_caching_v2", "no vLLM specops knows has it"]),
])
def test_what_the_image_cannot_run_is_refused_at_load(load_gpu_profile, overrides, field, needles):
    with pytest.raises(ProfileError) as err:
        load_gpu_profile("eagle-vllm", overrides)
    fields = [f for f, _ in err.value.problems]
    assert fields == [field], err.value
    for needle in needles:
        assert needle in str(err.value), (needle, str(err.value))


def test_an_engine_arg_newer_than_the_image_names_the_versions_that_have_it(load_gpu_profile):
    releases = vllm_releases()
    newer = sorted(releases["0.15.1"].engine_args - releases["0.7.3"].engine_args - {"speculative_config"})[0]
    with pytest.raises(ProfileError, match=rf"no engine arg {newer} .*vLLM \S+ \.\. \S+ have it"):
        load_gpu_profile("eagle-vllm", (f"backend.engine_args={{{newer}: 1}}",))


def test_25_09_runs_speculation_on_the_v1_engine_it_needs(load_gpu_profile):
    """vLLM 0.10.1.1 falls back to V0 under Triton, and its V0 has no speculative decoding."""
    profile = load_gpu_profile("eagle-vllm-nested", (f"backend.image={IMAGE.format('25.09')}",))
    backend = backend_for(profile)
    for variant in variants_of(profile.method, profile.comparison.baseline):
        assert backend.container_env(variant) == {"VLLM_USE_V1": "1"}
    line = " ".join(next(s for s in backend.plan(variants_of(profile.method, profile.comparison.baseline)[0], None, None) if s.step == "serve").commands)
    assert "-e VLLM_USE_V1=1" in line


def test_engine_args_may_not_override_what_specops_writes(load_gpu_profile):
    with pytest.raises(ProfileError, match="engine_args may not set model"):
        load_gpu_profile("eagle-vllm", ("backend.engine_args={model: x}",))


def test_profiles_carry_the_seed_values(load_gpu_profile):
    # Seed: vLLM README "EAGLE" (EAGLE-LLaMA3-Instruct-8B + Meta-Llama-3-8B-Instruct, num_speculative_tokens 5,
    # mounted at /hf-models) and "Draft Model-Based" (opt_model: opt-6.7b + opt-125m, 5 tokens, 25.02 tag);
    # docker flags: --gpus all --net=host --shm-size=1G --ulimit memlock=-1 --ulimit stack=67108864.
    eagle, opt = load_gpu_profile("eagle-vllm"), load_gpu_profile("draft-target-vllm")
    assert (eagle.target.source, eagle.draft.source) == ("hf://meta-llama/Meta-Llama-3-8B-Instruct",
                                                         "hf://yuhuili/EAGLE-LLaMA3-Instruct-8B")
    assert (opt.target.source, opt.draft.source) == ("hf://facebook/opt-6.7b", "hf://facebook/opt-125m")
    assert opt.backend.image == IMAGE.format("25.02")
    for profile in (eagle, opt):
        steps = backend_for(profile).plan(Variant("speculative", profile.method), None, None)
        line = " ".join(next(s for s in steps if s.step == "serve").commands)
        for flag in ("--gpus all", "--network host", "--shm-size=1G", "--ulimit memlock=-1",
                     "--ulimit stack=67108864", ":/model_repository", "--model-control-mode=explicit",
                     "--load-model=speculative", "-e HF_TOKEN", "--http-address=127.0.0.1"):
            assert flag in line, flag


def test_acceptance_source_follows_the_engine_under_triton(load_gpu_profile):
    v0 = backend_for(load_gpu_profile("eagle-vllm"))
    v1 = backend_for(load_gpu_profile("eagle-vllm-nested"))
    spec = Variant("speculative", load_gpu_profile("eagle-vllm").method)
    assert "Speculative metrics" in v0.acceptance_source(spec)
    text = v1.acceptance_source(spec)
    assert text.startswith(f"unavailable on {IMAGE.format('26.02')}: vLLM 0.15.1 runs the V1 engine")
    assert "do_log_stats" in text and "vllm_backend" in text

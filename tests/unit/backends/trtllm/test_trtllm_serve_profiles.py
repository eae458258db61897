"""trtllm-serve profiles and rendering against the seeds: NVIDIA's DGX Spark "Speculative Decoding"
playbook (the recipes as written, in tests/seeds.py)."""
from __future__ import annotations

import shlex

import pytest
import yaml

from specops.backends.trtllm.serve import YAML_NAME
from specops.bench.target import Api
from specops.bench.tool import BenchJob, bench_tool
from specops.pipeline.backend import backend_for
from specops.profile.errors import ProfileError
from specops.run.variant import Variant, variants_of
from tests.seeds import (
    SPARK_2510_EAGLE3,
    SPARK_2510_EAGLE3_SERVE,
    SPARK_2604_EAGLE3,
    SPARK_2604_EAGLE3_SERVE,
    SPARK_DRAFT_TARGET,
    SPARK_DRAFT_TARGET_SERVE,
)

RELEASE = "nvcr.io/nvidia/tensorrt-llm/release:{}"

CASES = [
    ("eagle3-trtllm-serve", SPARK_2510_EAGLE3, SPARK_2510_EAGLE3_SERVE, "hf://openai/gpt-oss-120b",
     "hf://nvidia/gpt-oss-120b-Eagle3", "1.2.0rc6"),
    ("draft-target-trtllm-serve", SPARK_DRAFT_TARGET, SPARK_DRAFT_TARGET_SERVE,
     "hf://nvidia/Llama-3.3-70B-Instruct-FP4", "hf://nvidia/Llama-3.1-8B-Instruct-FP4", "1.2.0rc6"),
    ("eagle3-trtllm-serve-long-context", SPARK_2604_EAGLE3, SPARK_2604_EAGLE3_SERVE,
     "hf://openai/gpt-oss-120b", "hf://nvidia/gpt-oss-120b-Eagle3-long-context", "1.3.0rc12"),
]


def _rendered(profile, variant_name="speculative") -> tuple[dict, list[str]]:
    backend = backend_for(profile)
    variant = {v.name: v for v in variants_of(profile.method, profile.comparison.baseline)}[variant_name]
    doc = yaml.safe_load(backend.all_files(variant, None, None)[YAML_NAME])
    command = backend.command(variant, backend.plan_endpoint())
    argv = shlex.split(command[-1].rsplit("exec ", 1)[-1]) if command[0] == "bash" else command
    return doc, argv


@pytest.mark.parametrize("name, seed_yaml, seed_flags, target, draft, tag", CASES)
def test_profile_reproduces_the_playbook(load_gpu_profile, name, seed_yaml, seed_flags, target, draft, tag):
    profile = load_gpu_profile(name)
    assert (profile.target.source, profile.draft.source) == (target, draft)
    assert profile.backend.image == RELEASE.format(tag)
    rendered, argv = _rendered(profile)
    expected = yaml.safe_load(seed_yaml)
    expected["speculative_config"]["speculative_model_dir"] = "/models/draft"  # our mount, not /opt/...
    assert rendered == expected | {"enable_iter_perf_stats": True}
    assert list(rendered) == [*expected, "enable_iter_perf_stats"]  # the playbook's key order
    assert argv[:2] == ["trtllm-serve", "/models/target"]
    assert seed_flags.split(" ", 2)[2] in shlex.join(argv)  # the flags after `trtllm-serve <model>`
    assert argv[argv.index("--extra_llm_api_options") + 1] == f"/config/{YAML_NAME}"
    assert argv[argv.index("--host") + 1] == "127.0.0.1"


def test_base_variant_yaml_has_no_speculation(load_gpu_profile):
    rendered, _ = _rendered(load_gpu_profile("eagle3-trtllm-serve"), "base")
    assert "speculative_config" not in rendered and rendered["kv_cache_config"]["enable_block_reuse"] is False


@pytest.mark.parametrize("overrides, expected", [
    (("method={kind: eagle3, num_speculative_tokens: 3}", "backend.decoding_type=null",
      "backend.speculative_model_key=null"),
     {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model": "/models/draft"}),
    (("method={kind: draft-target, num_speculative_tokens: 4}", "backend.decoding_type=null",
      "backend.speculative_model_key=null", "draft.source=hf://nvidia/Llama-3.1-8B-Instruct-FP4"),
     {"decoding_type": "Draft_Target", "max_draft_len": 4, "speculative_model": "/models/draft"}),
    (("method={kind: ngram, prompt_lookup_max: 3}", "draft=null", "backend.decoding_type=null"),
     {"decoding_type": "NGram", "max_draft_len": 4, "max_matching_ngram_size": 3}),
])
def test_default_spelling_is_what_trtllm_1_3_declares(load_gpu_profile, overrides, expected):
    rendered, _ = _rendered(load_gpu_profile("eagle3-trtllm-serve-long-context", overrides))
    assert rendered["speculative_config"] == expected


@pytest.mark.parametrize("overrides, field, needles", [
    (("backend.decoding_type=Eagle3",), "backend.decoding_type",
     ["TensorRT-LLM 1.2.0rc6", "first in TensorRT-LLM 1.3.0rc12"]),
    (("backend.extra_args=[--no_such_flag, '1']",), "backend.extra_args", ["trtllm-serve", "--no_such_flag"]),
    (("backend.llm_api_options={speculative_config: {}}",), "backend.llm_api_options", ["written by specops"]),
    (("backend.env={HF_TOKEN: x}",), "backend.env", ["secrets are passed from the environment"]),
    (("backend.image=nvcr.io/nvidia/tritonserver:25.12-trtllm-python-py3",), "backend.image",
     ["not an image backend 'trtllm-serve' runs", "tensorrt-llm/release:1.3.0rc12"]),
])
def test_refused_at_load(load_gpu_profile, overrides, field, needles):
    with pytest.raises(ProfileError) as err:
        load_gpu_profile("eagle3-trtllm-serve", overrides)
    assert [f for f, _ in err.value.problems] == [field], err.value
    for needle in needles:
        assert needle in str(err.value), (needle, str(err.value))


def test_bench_target_is_the_openai_completions_endpoint(load_gpu_profile):
    profile = load_gpu_profile("draft-target-trtllm-serve")
    target = backend_for(profile).bench_target(None, Variant("speculative", profile.method))
    assert target.apis == (Api.OPENAI_COMPLETIONS, Api.OPENAI_CHAT) and target.model == "/models/target"
    assert target.endpoints[Api.OPENAI_COMPLETIONS] == "http://127.0.0.1:<http port>"
    # trtllm-serve echoes the request's model in its answers: no alias, and the reason names the source
    assert target.alias is None and "postprocess_handlers.py" in target.no_alias


def test_aiperf_does_not_interleave_trtllm_serve_variants_and_says_why(load_gpu_profile, tmp_path):
    profile = load_gpu_profile("draft-target-trtllm-serve")
    backend = backend_for(profile)
    jobs = [BenchJob(target=backend.bench_target(None, variant), api=Api.OPENAI_COMPLETIONS, tokenizer="/t",
                     prompts=["a"], requests=1, warmup=0, output_tokens=8, concurrency=1,
                     artifact_dir=tmp_path / variant.name, log_path=tmp_path / "log", timeout_s=60)
            for variant in variants_of(profile.method, baseline=True)]
    why = bench_tool("aiperf").interleave_blocker(jobs)
    assert why is not None and "writes the request's own model name into every answer" in why


def test_container_flags_match_the_playbook(load_gpu_profile):
    profile = load_gpu_profile("eagle3-trtllm-serve-long-context")
    backend = backend_for(profile)
    variant = variants_of(profile.method, profile.comparison.baseline)[0]
    spec = backend.server_spec(variant, "/repo", [("/t", "/models/target"), ("/d", "/models/draft")],
                               backend.plan_endpoint())
    # docker run ... --ulimit memlock=-1 --ulimit stack=67108864 --gpus=all --ipc=host --network host -e HF_TOKEN
    assert spec.gpus == "all" and spec.ipc_mode == "host" and spec.network_mode == "host"
    assert {u.name: u.soft for u in spec.ulimits} == {"memlock": -1, "stack": 67108864}
    assert spec.secret_env == ("HF_TOKEN",) and "HF_TOKEN" not in spec.env
    assert spec.env == {"TIKTOKEN_ENCODINGS_BASE": "/tmp/harmony-reqs", "HF_HUB_CACHE": "/root/.cache/huggingface/hub"}
    assert spec.labels["specops.backend"] == "trtllm-serve"
    assert spec.command[:2] == ["bash", "-c"] and "exec trtllm-serve /models/target" in spec.command[2]
    assert "o200k_base.tiktoken" in spec.command[2] and "cl100k_base.tiktoken" in spec.command[2]

"""Each seed recipe's values appear in its profile's `specops plan`. The seed texts below are the
recipes as published (commands, YAML and flags written down verbatim from the sources named per
seed); where the framework version in the profile's image spells a value differently, the test
names the spelling and the plan says why.
"""
from __future__ import annotations

import json

import pytest
import yaml

from specops.pipeline.plan import format_plan
from specops.profile.loader import load_profile
from tests.reference import REFERENCE
from tests.seeds import (
    SPARK_2510_EAGLE3,
    SPARK_2510_EAGLE3_SERVE,
    SPARK_2604_EAGLE3,
    SPARK_2604_EAGLE3_SERVE,
    SPARK_DRAFT_TARGET,
    SPARK_DRAFT_TARGET_SERVE,
)


def plan(name: str) -> str:
    return format_plan(load_profile(name))


def yaml_lines(seed: str, drop: tuple[str, ...] = ()) -> list[str]:
    """The seed YAML's `key: value` lines as the plan prints them (2-space YAML), minus paths of its own."""
    doc = yaml.safe_load(seed)
    for dotted in drop:
        node = doc
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node[part]
        node.pop(leaf)
    return [line.strip() for line in yaml.safe_dump(doc, sort_keys=False).splitlines()]


def assert_in_plan(text: str, needles: list[str]) -> None:
    stripped = {line.strip().lstrip("| ").strip() for line in text.splitlines()}
    for needle in needles:
        assert needle in text or needle in stripped, needle


# --- triton-inference-server/tutorials@cb80dde Feature_Guide/Speculative_Decoding/vLLM ------------------
VLLM_DOCKER = ("docker run --gpus all -it --net=host --rm -p 8001:8001 --shm-size=1G --ulimit memlock=-1 "
               "--ulimit stack=67108864")


@pytest.mark.parametrize("name, reference, image", [
    ("eagle-vllm", "eagle_model", "nvcr.io/nvidia/tritonserver:25.03-vllm-python-py3"),
    ("draft-target-vllm", "opt_model", "nvcr.io/nvidia/tritonserver:25.02-vllm-python-py3"),
])
def test_vllm_tutorial_seed(name, reference, image):
    text = plan(name)
    seed = json.loads((REFERENCE / "tutorials_vllm" / reference / "1" / "model.json").read_text())
    assert_in_plan(text, [json.dumps({k: v})[1:-1] + ("," if k != list(seed)[-1] else "") for k, v in seed.items()])
    assert_in_plan(text, [image, "--gpus all", "--network host", "--shm-size=1G", "--ulimit memlock=-1",
                          "--ulimit stack=67108864", "--model-control-mode=explicit", "--load-model=speculative",
                          "--load-model=base"])
    assert "-it" not in text.split() and "8001:8001" not in text  # interactive / published ports: host network


# --- triton-inference-server/tutorials@4fe2b90 Feature_Guide/Speculative_Decoding/TRT-LLM (LLM API) -------
LLMAPI_EAGLE3_YAML = """
model: meta-llama/Llama-3.1-8B-Instruct
backend: pytorch
tensor_parallel_size: 1
pipeline_parallel_size: 1
speculative_config:
  decoding_type: Eagle3
  max_draft_len: 3
  speculative_model: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
triton_config:
  max_batch_size: 0
  decoupled: False
"""
LLMAPI_DRAFT_TARGET_YAML = """
model: meta-llama/Llama-3.1-8B-Instruct
backend: pytorch
tensor_parallel_size: 1
pipeline_parallel_size: 1
speculative_config:
  decoding_type: Draft_Target
  max_draft_len: 3
  speculative_model: /path/to/draft_model  # Must share the same tokenizer as the target model
triton_config:
  max_batch_size: 0
  decoupled: False
"""
# docker run --rm -it --net host --shm-size=2g --ulimit memlock=-1 --ulimit stack=67108864 --gpus all
#     -v ~/.cache/huggingface:/root/.cache/huggingface nvcr.io/nvidia/tritonserver:<xx.yy>-trtllm-python-py3
# cp -R /app/all_models/llmapi/ /opt/tritonserver/llmapi_repo/
# python3 /app/scripts/launch_triton_server.py --model_repo=/opt/tritonserver/llmapi_repo/
LLMAPI_COMMANDS = ["--network host", "--shm-size=2g", "--ulimit memlock=-1", "--ulimit stack=67108864",
                   "--gpus all", ":/root/.cache/huggingface", "-trtllm-python-py3",
                   "cp -R /app/all_models/llmapi/ /opt/tritonserver/llmapi_repo/",
                   "python3 /app/scripts/launch_triton_server.py", "--model_repo=/opt/tritonserver/llmapi_repo/"]


@pytest.mark.parametrize("name, seed, spelled", [
    ("eagle3-trtllm", LLMAPI_EAGLE3_YAML, "decoding_type: Eagle"),
    ("draft-target-trtllm", LLMAPI_DRAFT_TARGET_YAML, "decoding_type: DraftTarget"),
])
def test_trtllm_llmapi_tutorial_seed(name, seed, spelled):
    text = plan(name)
    lines = yaml_lines(seed, drop=("speculative_config.decoding_type", "speculative_config.speculative_model"))
    assert_in_plan(text, [line.replace("False", "false") for line in lines])
    # the image's TensorRT-LLM (1.2.1) spells these differently, and the plan says why
    assert_in_plan(text, [spelled, "speculative_model_dir: /hf-models/", "ships tensorrt-llm 1.2.1",
                          "first in TensorRT-LLM 1.3.0rc12"])
    assert_in_plan(text, LLMAPI_COMMANDS)


# --- triton-inference-server/tutorials@f6fd598 Feature_Guide/Speculative_Decoding/TRT-LLM (engines) ------
ENGINE_EAGLE = ("--dtype float16 --max_draft_len 63 --num_eagle_layers 4 --max_non_leaves_per_layer 10",
                "--gemm_plugin float16 --use_paged_context_fmha enable --speculative_decoding_mode eagle "
                "--max_batch_size 4")
ENGINE_MEDUSA = ("--dtype float16 --num_medusa_heads 4",
                 "--gemm_plugin float16 --speculative_decoding_mode medusa --max_batch_size 4")
ENGINE_BASE = ("--dtype float16", "--remove_input_padding enable --gpt_attention_plugin float16 --context_fmha enable "
               "--gemm_plugin float16 --paged_kv_cache enable --max_batch_size 4")
ENGINE_FILLS = ["triton_max_batch_size: 4", "preprocessing_instance_count: 1", "postprocessing_instance_count: 1",
                "decoupled_mode: false", "bls_instance_count: 1", "logits_datatype: TYPE_FP32",
                "triton_backend: tensorrtllm", "max_queue_delay_microseconds: 10000",
                "batching_strategy: inflight_fused_batching", "encoder_input_features_data_type: TYPE_FP16"]


@pytest.mark.parametrize("name, convert, build, example", [
    ("eagle-trtllm-engine", *ENGINE_EAGLE, "eagle"), ("medusa-trtllm-engine", *ENGINE_MEDUSA, "medusa"),
])
def test_trtllm_engine_tutorial_seed(name, convert, build, example):
    text = plan(name)
    assert_in_plan(text, [convert, build, f"/app/examples/{example}/convert_checkpoint.py", *ENGINE_FILLS,
                          "/app/examples/llama/convert_checkpoint.py", ENGINE_BASE[0], ENGINE_BASE[1],
                          "/app/tools/fill_template.py -i /opt/tritonserver/inflight_batcher_llm/",
                          "python3 /app/scripts/launch_triton_server.py", "--world_size=1",
                          "--model_repo=/opt/tritonserver/inflight_batcher_llm",
                          "--shm-size=2g", "--ulimit memlock=-1", "--ulimit stack=67108864", "--gpus all",
                          "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3"])


# --- NVIDIA/dgx-spark-playbooks nvidia/speculative-decoding/README.md ---------------------------------
SPARK_DOCKER = ["--ulimit memlock=-1", "--ulimit stack=67108864", "--gpus all", "--ipc host", "--network host",
                "-e HF_TOKEN"]


@pytest.mark.parametrize("name, seed, serve, models, image", [
    ("eagle3-trtllm-serve", SPARK_2510_EAGLE3, SPARK_2510_EAGLE3_SERVE,
     ["hf://openai/gpt-oss-120b", "hf://nvidia/gpt-oss-120b-Eagle3"], "release:1.2.0rc6"),
    ("draft-target-trtllm-serve", SPARK_DRAFT_TARGET, SPARK_DRAFT_TARGET_SERVE,
     ["hf://nvidia/Llama-3.3-70B-Instruct-FP4", "hf://nvidia/Llama-3.1-8B-Instruct-FP4"], "release:1.2.0rc6"),
    ("eagle3-trtllm-serve-long-context", SPARK_2604_EAGLE3, SPARK_2604_EAGLE3_SERVE,
     ["hf://openai/gpt-oss-120b", "hf://nvidia/gpt-oss-120b-Eagle3-long-context"], "release:1.3.0rc12"),
])
def test_dgx_spark_playbook_seed(name, seed, serve, models, image):
    text = plan(name)
    assert_in_plan(text, yaml_lines(seed, drop=("speculative_config.speculative_model_dir",)))
    assert_in_plan(text, ["speculative_model_dir: /models/draft", *SPARK_DOCKER, image,
                          *[f"{'target' if i == 0 else 'draft'}: {m}" for i, m in enumerate(models)]])
    flags = serve.split(" ", 2)[2]  # the flags after `trtllm-serve <model>`: our model is the mounted checkpoint
    assert f"trtllm-serve /models/target --host 127.0.0.1 --port <free port> {flags}" in text

"""Build, render and serve commands of the trtllm-engine profiles against the seed.

Seed: triton-inference-server/tutorials@f6fd598 Feature_Guide/Speculative_Decoding/TRT-LLM/README.md
(EAGLE "Create Engines for Each Model", Medusa "Build the TRT-LLM engine for MEDUSA", base
"Build the TRT-LLM engine for the base model", "Launch Triton TensorRT-LLM container",
"Launch Tritonserver"); draft-target: TensorRT-LLM examples/draft_target_model/README.md.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from specops.backends.spec import FieldError
from specops.backends.trtllm.engine_commands import build_commands, layout, render_commands
from specops.backends.trtllm.engine_config import TrtllmEngineBackendConfig
from specops.methods import METHODS
from specops.pipeline.backend import backend_for
from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile, read_document
from specops.run.variant import Variant
from specops.triton.client import Endpoint

PROFILES = Path(__file__).resolve().parents[4] / "profiles"


def _load(name: str):
    doc = read_document(PROFILES / f"{name}.yaml")
    cfg = TrtllmEngineBackendConfig(**doc["backend"])
    method = METHODS.get(doc["method"]["kind"])(**doc["method"])
    return doc, cfg, method


def _commands(cfg, method, has_draft=True):
    return build_commands(cfg, cfg.resolve(method), method, layout(cfg, has_draft))


def serve_command(name: str, overrides=()) -> str:
    profile = load_profile(name, list(overrides)).profile
    backend = backend_for(profile)
    return backend.command(Variant("speculative", profile.method), Endpoint("127.0.0.1", 1, 2, 3))[-1]


def _flags(argv: list[str]) -> dict[str, str]:
    """--flag value pairs (paths dropped: the seed's are its own)."""
    return {argv[i][2:]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}


PATHS = {"model_dir", "eagle_model_dir", "medusa_model_dir", "output_dir", "checkpoint_dir"}


def _no_paths(flags: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in flags.items() if k not in PATHS}


def test_eagle_profile_models_and_commands_match_the_seed():
    doc, cfg, method = _load("eagle-trtllm-engine")
    assert doc["target"]["source"] == "hf://lmsys/vicuna-7b-v1.3"
    assert doc["draft"]["source"] == "hf://yuhuili/EAGLE-Vicuna-7B-v1.3"
    convert, build = _commands(cfg, method)
    assert convert.argv[:2] == ["python3", "/app/examples/eagle/convert_checkpoint.py"]
    assert _no_paths(_flags(convert.argv)) == {"dtype": "float16", "max_draft_len": "63", "num_eagle_layers": "4",
                                               "max_non_leaves_per_layer": "10"}
    assert [a for a in convert.argv if a.startswith("--")] == [
        "--model_dir", "--eagle_model_dir", "--output_dir", "--dtype", "--max_draft_len", "--num_eagle_layers",
        "--max_non_leaves_per_layer"]
    assert build.argv[0] == "trtllm-build"
    assert _no_paths(_flags(build.argv)) == {"gemm_plugin": "float16", "use_paged_context_fmha": "enable",
                                             "speculative_decoding_mode": "eagle", "max_batch_size": "4"}
    assert _flags(build.argv)["checkpoint_dir"] == _flags(convert.argv)["output_dir"]


def test_medusa_profile_models_and_commands_match_the_seed():
    doc, cfg, method = _load("medusa-trtllm-engine")
    assert doc["draft"]["source"] == "hf://FasterDecoding/medusa-vicuna-7b-v1.3"
    convert, build = _commands(cfg, method)
    assert convert.argv[1] == "/app/examples/medusa/convert_checkpoint.py"
    assert _no_paths(_flags(convert.argv)) == {"dtype": "float16", "num_medusa_heads": "4"}
    assert _no_paths(_flags(build.argv)) == {"gemm_plugin": "float16", "speculative_decoding_mode": "medusa",
                                             "max_batch_size": "4"}


@pytest.mark.parametrize("name", ["eagle-trtllm-engine", "medusa-trtllm-engine"])
def test_base_engine_matches_the_seed(name):
    _, cfg, _ = _load(name)
    convert, build = _commands(cfg, METHODS.get("none")(), has_draft=False)
    assert convert.argv[1] == "/app/examples/llama/convert_checkpoint.py"
    assert _no_paths(_flags(convert.argv)) == {"dtype": "float16"}
    assert _no_paths(_flags(build.argv)) == {"remove_input_padding": "enable", "gpt_attention_plugin": "float16",
                                             "context_fmha": "enable", "gemm_plugin": "float16",
                                             "paged_kv_cache": "enable", "max_batch_size": "4"}


@pytest.mark.parametrize("name", ["eagle-trtllm-engine", "medusa-trtllm-engine"])
def test_container_and_serve_match_the_seed(name):
    doc, cfg, method = _load(name)
    assert cfg.image.startswith("nvcr.io/nvidia/tritonserver:") and cfg.image.endswith("-trtllm-python-py3")
    yy, mm = cfg.image.split(":")[1].split("-")[0].split(".")
    assert (int(yy), int(mm)) >= (25, 1)  # "must be >= 25.01"
    assert cfg.shm_size == "2g"
    assert doc["benchmark"]["concurrency"] == 1
    cmd = serve_command(name)
    assert "python3 /app/scripts/launch_triton_server.py --tritonserver=/tmp/specops-tritonserver --world_size=1" in cmd
    assert "--http_port=1 --grpc_port=2 --metrics_port=3" in cmd
    fills = render_commands(cfg, method, layout(cfg, True))
    assert fills[0][:2] == ["cp", "-R"] and fills[0][2].startswith("/app/all_models/inflight_batcher_llm")
    assert all(f[:3] == ["python3", "/app/tools/fill_template.py", "-i"] for f in fills[1:])


def test_draft_target_builds_both_engines():
    # examples/draft_target_model/README.md: the target gets draft_tokens_external and max_draft_len
    cfg = TrtllmEngineBackendConfig(kind="trtllm-engine", image="nvcr.io/nvidia/tritonserver:25.03-trtllm-python-py3",
                                    build_flags={"gemm_plugin": "float16", "use_paged_context_fmha": "enable"})
    method = METHODS.get("draft-target")(num_speculative_tokens=10)
    steps = _commands(cfg, method)
    assert [s.name for s in steps] == ["convert-draft", "build-draft", "convert-target", "build-target"]
    target = _flags(steps[-1].argv)
    assert target["speculative_decoding_mode"] == "draft_tokens_external" and target["max_draft_len"] == "10"
    assert "--multi-model" in serve_command("eagle-trtllm-engine", ["method={kind: draft-target}"])


def test_specops_owned_flags_cannot_be_overridden():
    with pytest.raises(ValueError, match="set by specops"):
        TrtllmEngineBackendConfig(kind="trtllm-engine", build_flags={"max_batch_size": "8"})
    with pytest.raises(ValueError, match="not an image backend 'trtllm-engine' runs"):
        TrtllmEngineBackendConfig(kind="trtllm-engine", image="nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3")


def test_eagle_without_max_draft_len_takes_convert_checkpoints_default():
    cfg = TrtllmEngineBackendConfig(kind="trtllm-engine")
    convert, _ = _commands(cfg, METHODS.get("eagle")())
    assert "--max_draft_len" not in convert.argv  # convert_checkpoint.py defaults it to 63 (data/trtllm_engine.yaml)


@pytest.mark.parametrize("overrides, field, needles", [
    (("backend.image=nvcr.io/nvidia/tritonserver:25.06-trtllm-python-py3",), "backend.image",
     ["TensorRT-LLM 0.20.0", "0.17.0 (25.01/25.02)", "0.19.0 (25.05)"]),
    (("backend.build_flags={no_such_plugin: enable}",), "backend.build_flags",
     ["TensorRT-LLM 0.17.0", "--no_such_plugin"]),
    (("backend.triton={extra: {tensorrt_llm: {no_such_key: '1'}}}",), "backend.triton.extra",
     ["tensorrt_llm/config.pbtxt of v0.17.0 has no ${...} key no_such_key"]),
])
def test_what_the_image_cannot_build_is_refused_at_load(overrides, field, needles):
    with pytest.raises(ProfileError) as err:
        load_profile("eagle-trtllm-engine", list(overrides))
    assert [f for f, _ in err.value.problems] == [field], err.value
    for needle in needles:
        assert needle in str(err.value), (needle, str(err.value))


def test_examples_follow_the_release():
    """TensorRT-LLM 0.19.0 still keeps examples/llama (25.05); the data says 0.20 moved it to models/core."""
    cfg = TrtllmEngineBackendConfig(kind="trtllm-engine", image="nvcr.io/nvidia/tritonserver:25.05-trtllm-python-py3")
    convert, _ = _commands(cfg, METHODS.get("none")(), has_draft=False)
    assert convert.argv[1] == "/app/examples/llama/convert_checkpoint.py"
    with pytest.raises(FieldError):
        TrtllmEngineBackendConfig(kind="trtllm-engine",
                                  image="nvcr.io/nvidia/tritonserver:25.07-trtllm-python-py3").resolve(METHODS.get("none")())

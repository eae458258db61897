"""The GPU seed profiles: they plan without a GPU, their settings are the seed's (tests/seeds.py) spelled as
ModelOpt's recipe fields at the pinned release, and bad values of the GPU sections are named."""
from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

import pytest
import yaml

from specops.draft.gpu import modelopt_facts
from specops.draft.gpu_recipe import recipe, recipe_yaml
from specops.pipeline.plan import format_plan
from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile
from tests.seeds import (
    MODELOPT_SEED_DATA,
    MODELOPT_SEED_EAGLE_ARGS,
    MODELOPT_SEED_LAUNCH,
    MODELOPT_SEED_TRAIN,
    MODELOPT_SEED_VLLM,
)

PROFILES = {"medusa": "medusa-trtllm-engine-seed", "eagle": "eagle-vllm-seed"}
ROOT = Path(__file__).resolve().parents[3]


def seed_launch(mode: str) -> dict[str, str]:
    """The seed's `./launch.sh ...` flags for one mode."""
    for command in MODELOPT_SEED_TRAIN.replace("\\\n", " ").strip().split("\n\n"):
        argv = shlex.split(command)[1:]
        flags = dict(zip(argv[::2], argv[1::2], strict=True))
        if flags["--mode"] == mode:
            return flags
    raise AssertionError(mode)


def seed_flags(line_start: str, text: str) -> dict[str, str]:
    line = next(x for x in text.splitlines() if x.startswith(line_start))
    argv = shlex.split(line)
    return {a: b for a, b in zip(argv, argv[1:]) if a.startswith("--")}


def launch_defaults() -> dict[str, str]:
    """`--name value` pairs launch.sh passes main.py, with TRAIN_BS's default substituted."""
    bs = re.search(r"TRAIN_BS=\$\{TRAIN_BS:-(\d+)\}", MODELOPT_SEED_LAUNCH).group(1)
    pairs = re.findall(r"--(\w+) (\S+)", MODELOPT_SEED_LAUNCH.replace("$TRAIN_BS", bs))
    return {k: v for k, v in pairs if not v.startswith("$")}


@pytest.fixture(scope="module")
def loaded():
    return {mode: load_profile(name) for mode, name in PROFILES.items()}


@pytest.mark.parametrize("mode", PROFILES)
def test_seed_profile_plans_every_container_without_a_gpu(loaded, mode):
    text = format_plan(loaded[mode])
    for needle in [
        # the data step: the seed's `vllm serve` as backend vllm-serve, through the Docker launcher, key by name
        # only; the seed's flags in serve.yaml (--config), the target the mounted download
        "nvcr.io/nvidia/tritonserver:26.02-vllm-python-py3 ships vllm 0.15.1",
        "repository/synthesis/serve.yaml: model: /hf-models/TinyLlama-1.1B-Chat-v1.0; tensor-parallel-size: 1",
        "-v '<target checkpoint from the download step>:/hf-models/TinyLlama-1.1B-Chat-v1.0:ro'",
        f"--label specops.profile={PROFILES[mode]} --label specops.role=server-synthesis",
        "-e HF_HUB_OFFLINE=1", "-e VLLM_API_KEY nvcr.io/nvidia/tritonserver:26.02-vllm-python-py3 vllm serve "
        "--config /config/serve.yaml --host 127.0.0.1 --port <free port> --served-model-name synthesis",
        "ready: GET http://127.0.0.1:<free port>/health",
        "100000 prompts (hf://datasets/nvidia/Daring-Anteater/train.jsonl) -> POST "
        "http://127.0.0.1:<free port>/v1/chat/completions (model synthesis,", "max_tokens 512, 256 in flight",
        # training: ModelOpt's example at the pinned release, its launch line, one process per GPU
        "--gpus 1 --shm-size=16g", "nvcr.io/nvidia/pytorch:25.08-py3 bash -c",
        "nvidia-modelopt[hf]==0.47.0", "git clone --depth 1 --branch 0.47.0 https://github.com/NVIDIA/Model-Optimizer",
        "accelerate launch --mixed_precision bf16 --num_processes 1 main.py --config /specops/out/recipe.yaml",
        f"recipe_type: speculative_{mode}",
    ]:
        assert needle in text, needle
    assert "--api-key" not in text and "token-abc123" not in text  # the key is never on a command line
    synthesize = text.split("[synthesize]")[1].split("[train]")[0]
    assert "VLLM_SERVER_DEV_MODE" not in synthesize  # no read-back: dev endpoints are not behind the API key
    if mode == "eagle":
        assert "scripts/export_hf_checkpoint.py --model_path /specops/out/checkpoint" in text
        assert '"method": "eagle3"' in text  # vLLM loads ModelOpt's EAGLE export with its eagle3 method
    else:
        assert "medusa_lm_head.safetensors" in text and "--speculative_decoding_mode medusa" in text


@pytest.mark.parametrize("mode", PROFILES)
def test_seed_settings_are_the_seed_texts(loaded, mode):
    profile = loaded[mode].profile
    train, data = profile.draft.train, profile.draft.train.data
    flags = seed_launch(mode)
    serve = seed_flags("vllm serve", MODELOPT_SEED_VLLM)
    generate = seed_flags("python3 server_generate.py", MODELOPT_SEED_DATA)
    model = shlex.split(next(x for x in MODELOPT_SEED_VLLM.splitlines() if x.startswith("vllm serve")))[2]
    assert profile.target.source == f"hf://{flags['--model']}" == f"hf://{model}"
    assert data.conversations == "hf://datasets/nvidia/" + generate["--data_path"]
    assert "huggingface.co/datasets/nvidia/Daring-Anteater" in MODELOPT_SEED_DATA
    assert data.max_tokens == int(generate["--max_token"])
    assert data.server.tensor_parallel_size == int(serve["--tensor-parallel-size"])
    assert train.mode == flags["--mode"] and train.gpu.gpus == int(flags["--num_gpu"])

    doc = recipe(train, profile.method.draft_length(), "data.jsonl")
    t = doc["training"]
    assert (t["num_train_epochs"], t["learning_rate"], t["save_steps"]) == (
        float(flags["--num_epochs"]), float(flags["--lr"]), int(flags["--save_steps"]))
    # launch.sh's other settings, as 0.47 names them (model_max_length became training_seq_len)
    defaults = launch_defaults()
    renamed = {"model_max_length": "training_seq_len"}
    for name, value in defaults.items():
        if name in ("mode", "do_eval", "per_device_eval_batch_size", "eval_accumulation_steps"):
            continue  # the mode is the recipe type; 0.47's recipe has no evaluation (see modelopt.yaml)
        if name == "mixed_precision":  # accelerate's flag, on the launch line as launch_train.sh has it
            assert modelopt_facts()["launch"]["argv"][-2:] == ["--mixed_precision", value]
            continue
        assert str(t[renamed.get(name, name)]).lower() == value.lower(), name
    if mode == "medusa":
        assert doc["medusa"] == {"medusa_num_heads": int(flags["--medusa_num_heads"]),
                                 "medusa_num_layers": int(flags["--medusa_num_layers"])}
        assert profile.method.draft_length() == int(flags["--medusa_num_heads"])
    else:
        arch = doc["eagle"]["eagle_architecture_config"]
        assert arch["num_hidden_layers"] == int(flags["--eagle_num_layers"])
        assert "use_input_layernorm_in_first_layer: bool | None = field(default=True)" in MODELOPT_SEED_EAGLE_ARGS
        assert arch["use_input_layernorm_in_first_layer"] is True and arch["use_aux_hidden_state"] is False
        assert doc["eagle"]["eagle_use_torch_compile"] is True and t["bf16"] is True
    # every seed flag says where it went in 0.47 (or why it is gone)
    assert {f if f != "--mode" else f"--mode {mode}" for f in flags} <= set(modelopt_facts()["seed_flags"])


def test_pinned_modelopt_is_the_one_installed_and_in_pyproject():
    import modelopt

    pin = re.search(r'"nvidia-modelopt==([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert str(modelopt_facts()["version"]) == pin == modelopt.__version__


@pytest.mark.parametrize("mode", PROFILES)
def test_recipe_loads_with_modelopts_own_schema(loaded, mode, tmp_path):
    """ModelOpt 0.47.0's load_recipe (what main.py --config runs) validates every rendered field."""
    import transformers
    from modelopt.recipe.config import ModelOptEagleRecipe, ModelOptMedusaRecipe
    from modelopt.recipe.loader import load_recipe
    from modelopt.torch.speculative.config import eagle3_default_config
    from modelopt.torch.speculative.plugins.hf_training_args import TrainingArguments as SpecTrainingArgs

    profile = loaded[mode].profile
    path = tmp_path / "recipe.yaml"
    path.write_text(recipe_yaml(profile.draft.train, profile.method.draft_length(), "data.jsonl"))
    parsed = load_recipe(path)
    if mode == "medusa":
        assert isinstance(parsed, ModelOptMedusaRecipe) and parsed.medusa.medusa_num_heads == 2
    else:
        assert isinstance(parsed, ModelOptEagleRecipe)
        assert parsed.eagle.eagle_offline is False and parsed.eagle.eagle_use_torch_compile is True
        assert set(parsed.eagle.eagle_architecture_config) <= set(eagle3_default_config)
    assert parsed.data.mode == "online"
    # HF trainer fields pass through ModelOpt's TrainingArguments as extras: they must be HF's own
    extras = set(yaml.safe_load(path.read_text())["training"]) - set(SpecTrainingArgs.model_fields)
    assert extras <= {f.name for f in dataclasses.fields(transformers.TrainingArguments)}


@pytest.mark.parametrize("override, message", [
    ("draft.train.gpu.gpus=0", "draft.train.gpu.gpus"),
    ("draft.train.gpu.gpu=2", "draft.train.gpu.gpu: unknown key 'gpu'"),
    ("draft.train.threads=4", "threads: a CPU-trainer setting; with 'gpu' remove it"),
    ("draft.train.data.server.kind=sglang", "draft.train.data.server.kind"),
    ("draft.train.data.server.gpus=none", "gpus must name at least one GPU"),
    ("draft.train.data.server.image=nvcr.io/nvidia/tritonserver:26.02-trtllm-python-py3",
     "is not a -vllm-python-py3 image"),
    ("draft.train.data.server.image=vllm/vllm-openai:latest", "draft.train.data.server.image"),
    ("draft.train.data.server.image=nvcr.io/nvidia/tritonserver:25.10-vllm-python-py3",
     "ships vLLM 0.10.2; the synthesis server is backend vllm-serve, which serves vLLM 0.11.0 or newer"),
    ("draft.train.data.endpoint=http://127.0.0.1:8000", "give one of 'endpoint'"),
    ("draft.train.data.conversations=hf://datasets/nvidia/Daring-Anteater", "expected hf://datasets/org/name"),
])
def test_bad_gpu_settings_name_the_field(override, message):
    with pytest.raises(ProfileError) as info:
        load_profile("medusa-trtllm-engine-seed", [override])
    assert message in str(info.value)


def test_synthesis_images_are_the_ones_vllm_serve_serves():
    """The section refuses at load what backend vllm-serve would refuse at plan; every image it takes plans."""
    from specops.backends.vllm.support import SERVE_FROM as BACKEND_SERVE_FROM
    from specops.draft.gpu import SERVE_FROM, VllmSynthesisServer
    from specops.versions.images import known_images

    assert SERVE_FROM == BACKEND_SERVE_FROM
    taken = 0
    for image in known_images("vllm", "tritonserver", "vllm-python-py3"):
        try:
            VllmSynthesisServer(image=image)
        except ValueError:
            continue
        profile = load_profile("eagle-vllm-seed", [f"draft.train.data.server.image={image}"])
        assert f"{image} vllm serve --config /config/serve.yaml" in format_plan(profile)
        taken += 1
    assert taken >= 2


def test_eagle_export_must_be_loaded_as_a_modelopt_export():
    with pytest.raises(ProfileError, match=r"backend.draft_format: the draft is trained here with ModelOpt; set "
                                           r"backend.draft_format: modelopt"):
        load_profile("eagle-vllm-seed", ["backend.draft_format=published"])
    with pytest.raises(ProfileError, match=r"backend.draft_format: vLLM 0.11.1 .* loads from vLLM 0.12.0"):
        load_profile("eagle-vllm-seed", ["backend.image=nvcr.io/nvidia/tritonserver:25.12-vllm-python-py3"])

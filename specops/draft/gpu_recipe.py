"""What the GPU training renders: ModelOpt's recipe and the training container (the synthesis server is
backend vllm-serve: VllmSynthesisServer.backend_section).

Pure (plan and run both call it; no docker, torch or modelopt). The recipe is ModelOpt's own format at the
pinned release (`main.py --config`, modelopt.recipe): the seed's launch.sh settings mapped to 0.47's fields
as specops/draft/data/modelopt.yaml records, with ModelOpt's GPU settings (bf16, torch.compile) and one
data-parallel process per GPU, as launch_train.sh starts them.
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml

from specops.draft.gpu import GpuTraining, modelopt_facts
from specops.draft.spec import TrainSpec
from specops.launch.container import LABEL_PROFILE, LABEL_ROLE, ContainerSpec, Mount

TARGET_IN = "/hf-models/target"  # the downloaded target, mounted read-only
DATA_IN = "/specops/data"  # the synthesized data set's directory, read-only
OUT_IN = "/specops/out"  # the draft's scratch directory: recipe in, checkpoint and export out
RECIPE = "recipe.yaml"
CHECKPOINT = "checkpoint"
EXPORT = "export"
EXAMPLES_IN = "/opt/Model-Optimizer"


def recipe(train: TrainSpec, draft_length: int, data_file: str) -> dict[str, Any]:
    """ModelOpt's speculative-decoding recipe for this training (modelopt.recipe, metadata.recipe_type)."""
    facts, gpu = modelopt_facts(), train.gpu
    assert gpu is not None, "recipe() renders the GPU trainer's settings"
    training = {"output_dir": f"{OUT_IN}/{CHECKPOINT}", "num_train_epochs": train.epochs,
                "learning_rate": train.lr, "save_steps": gpu.save_steps, "seed": train.seed,
                **facts["seed_training"], "per_device_train_batch_size": train.batch_size,
                "training_seq_len": train.seq_len}
    if train.max_steps is not None:
        training["max_steps"] = train.max_steps
    doc: dict[str, Any] = {
        "metadata": {"recipe_type": facts["launch"]["recipe_types"][train.mode],
                     "description": f"specops: the ModelOpt seed recipe, mode {train.mode}"},
        "model": {"model_name_or_path": TARGET_IN, "trust_remote_code": False},
        "data": {"data_path": f"{DATA_IN}/{data_file}"},
        "training": training,
    }
    if train.mode == "medusa":
        doc["medusa"] = {"medusa_num_heads": draft_length, "medusa_num_layers": 1, **train.options}
    else:
        doc["eagle"] = {**facts["gpu_eagle"], **train.options,
                        "eagle_architecture_config": eagle_architecture(train)}
    return doc


def eagle_architecture(train: TrainSpec) -> dict[str, Any]:
    """The seed's EAGLE module settings (0.47 keys), the mode's auxiliary-state switch, the profile's overrides.
    Hidden and vocabulary sizes come from the base model inside ModelOpt; the rest are ModelOpt's defaults."""
    arch = dict(modelopt_facts()["seed_eagle_architecture"])
    arch["use_aux_hidden_state"] = train.mode == "eagle3"
    return {**arch, **train.architecture}


def recipe_yaml(train: TrainSpec, draft_length: int, data_file: str) -> str:
    return yaml.safe_dump(recipe(train, draft_length, data_file), sort_keys=False)


def _labels(profile: str, role: str) -> dict[str, str]:
    return {LABEL_PROFILE: profile, LABEL_ROLE: role, "specops.run.variant": role}


def training_commands(train: TrainSpec) -> list[str]:
    """The in-container steps: install the pinned ModelOpt and its examples, train, export."""
    facts, gpu = modelopt_facts(), train.gpu
    ex = facts["examples"]
    launch = [*facts["launch"]["argv"], "--num_processes", str(gpu.gpus)]
    if gpu.gpus > 1:
        launch.append("--multi_gpu")
    package = f"nvidia-modelopt[hf]=={facts['version']}"
    steps = [f"pip install {shlex.quote(package)}",
             shlex.join(["git", "clone", "--depth", "1", "--branch", str(ex["tag"]), ex["repository"], EXAMPLES_IN]),
             f"cd {EXAMPLES_IN}/{ex['dir']}",
             "pip install -r requirements.txt",
             shlex.join([*launch, "main.py", "--config", f"{OUT_IN}/{RECIPE}"])]
    if train.mode != "medusa":
        steps.append(shlex.join(["python3", "scripts/export_hf_checkpoint.py", "--model_path",
                                 f"{OUT_IN}/{CHECKPOINT}", "--export_path", f"{OUT_IN}/{EXPORT}"]))
    return steps


def training_container(train: TrainSpec, profile: str, target_dir: Path | str, data_dir: Path | str,
                       out_dir: Path | str) -> ContainerSpec:
    """`docker run` of the training: the target and data read-only, the scratch directory writable."""
    gpu: GpuTraining = train.gpu
    return ContainerSpec(
        image=gpu.image, command=["bash", "-c", "set -e; " + "; ".join(training_commands(train))],
        env={"TOKENIZERS_PARALLELISM": "False", "HF_HUB_OFFLINE": "1"},
        mounts=[Mount(Path(target_dir), TARGET_IN, True), Mount(Path(data_dir), DATA_IN, True),
                Mount(Path(out_dir), OUT_IN)],
        gpus=gpu.gpus, shm_size=gpu.shm_size, labels=_labels(profile, "train"))

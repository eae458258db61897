"""Train in ModelOpt's example container on GPUs, then collect the export and what the trainer reported.

The container (specops/draft/gpu_recipe.py) reads the recipe from the scratch directory, writes the
checkpoint there and, for the eagle modes, ModelOpt's deployable export. ModelOpt 0.47 has no Medusa
exporter, so the Medusa layout (config.json + medusa_lm_head.safetensors, what TensorRT-LLM's
examples/medusa/convert_checkpoint.py reads) is written here from the checkpoint's medusa_heads.* tensors.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from specops.draft.gpu_recipe import CHECKPOINT, EXPORT, RECIPE, recipe_yaml, training_container
from specops.draft.spec import TrainResult, TrainSpec
from specops.run.progress import Progress

MEDUSA_PREFIX = "medusa_heads."
LOG = "train-container.log"


def train_in_container(spec: TrainSpec, target_dir: Path, data_path: Path, out_dir: Path,
                       log: Callable[[str], None], draft_length: int, progress: Progress | None = None,
                       profile: str = "", launcher=None) -> TrainResult:
    """Run the training container to completion (bounded by gpu.timeout_s) and return its result."""
    if launcher is None:
        from specops.launch import DockerLauncher

        launcher = DockerLauncher()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / RECIPE).write_text(recipe_yaml(spec, draft_length, data_path.name), encoding="utf-8")
    container = training_container(spec, profile, target_dir, data_path.parent, out_dir)
    log(f"{spec.mode}: training in {container.image} on {spec.gpu.gpus} GPU(s); log {out_dir / LOG}")
    started = time.monotonic()
    launcher.run(container, out_dir / LOG, spec.gpu.timeout_s)
    seconds = time.monotonic() - started
    if progress is not None:
        progress(1.0, "trained")
    export_dir = out_dir / EXPORT
    if spec.mode == "medusa":
        export_medusa_checkpoint(out_dir / CHECKPOINT, export_dir, target_dir)
    if not (export_dir / "config.json").is_file():
        raise RuntimeError(f"the training container left no export at {export_dir} (log {out_dir / LOG})")
    steps, loss = trainer_summary(out_dir / CHECKPOINT)
    return TrainResult(mode=spec.mode, export_dir=export_dir, sequences=_lines(data_path), tokens=0, steps=steps,
                       train_seconds=seconds, prepare_seconds=0.0, final_loss=loss)


def trainer_summary(checkpoint: Path) -> tuple[int, float]:
    """(optimizer steps, last logged loss) from the HF Trainer's trainer_state.json (nan when absent)."""
    path = checkpoint / "trainer_state.json"
    if not path.is_file():
        return 0, float("nan")
    state = json.loads(path.read_text())
    losses = [entry["loss"] for entry in state.get("log_history", []) if "loss" in entry]
    return int(state.get("global_step", 0)), float(losses[-1]) if losses else float("nan")


def export_medusa_checkpoint(checkpoint: Path, export_dir: Path, target_dir: Path) -> Path:
    """The Medusa layout from a ModelOpt Medusa checkpoint: head i's ResBlocks `{i}.{j}.linear.*`, then
    its projection `{i}.{layers}.weight` (ModelOpt's HFMedusaModel.medusa_heads, minus the prefix)."""
    from safetensors import safe_open

    from specops.runtime.medusa_proposer import write_medusa_layout

    tensors = {}
    for shard in sorted(Path(checkpoint).glob("*.safetensors")):
        with safe_open(str(shard), "pt") as handle:
            for key in handle.keys():  # noqa: SIM118 (safe_open has no __iter__)
                if key.startswith(MEDUSA_PREFIX):
                    tensors[key[len(MEDUSA_PREFIX):]] = handle.get_tensor(key)
    if not tensors:
        raise RuntimeError(f"{checkpoint}: no {MEDUSA_PREFIX}* tensors in its safetensors files")
    target = json.loads((Path(target_dir) / "config.json").read_text())
    return write_medusa_layout(tensors, export_dir, target["hidden_size"], target["vocab_size"], str(target_dir))


def _lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())

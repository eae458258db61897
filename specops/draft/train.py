"""Train the draft module a profile asks for: the trainer registry and its one entry point."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specops.draft.conversations import read_conversations
from specops.draft.evaluate import measure_acceptance
from specops.draft.spec import TrainSpec
from specops.draft.train_result import RESULT_FILE, TrainResult
from specops.registry import Registry
from specops.run.progress import Progress

Trainer = Callable[..., TrainResult]
TRAINERS: Registry[Trainer] = Registry("training mode")
TRAINERS.register("eagle3", "specops.draft.eagle_train:train_eagle")
TRAINERS.register("eagle", "specops.draft.eagle_train:train_eagle")
TRAINERS.register("medusa", "specops.draft.medusa_train:train_medusa")
TRAINERS.register("distill", "specops.draft.distill:train_distill")


def train_draft(spec: TrainSpec, draft_length: int, target_dir: Path, data_path: Path, out_dir: Path,
                log: Callable[[str], None] = print, eval_prompts: list[str] = (),
                eval_tokens: int = 32, progress: Progress | None = None, profile: str = "") -> TrainResult:
    """Train, export under out_dir/export, measure acceptance, write out_dir/train_result.json.
    With `spec.gpu`, ModelOpt's example trains in a container on GPUs instead (every mode but distill);
    held-out acceptance is then left to the benchmark, which serves the draft on the GPU."""
    # The whole file is read before the target loads: a bad line fails in seconds, with its number.
    read_conversations(data_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    if spec.gpu is not None:
        from specops.draft.gpu_train import train_in_container

        result = train_in_container(spec, target_dir, data_path, out_dir, log, draft_length=draft_length,
                                    progress=progress, profile=profile)
        eval_prompts = ()
    else:
        trainer = TRAINERS.get(spec.mode)
        result = trainer(spec, target_dir, data_path, out_dir, log, draft_length=draft_length, progress=progress)
    if eval_prompts:
        result.acceptance = measure_acceptance(spec.mode, result.export_dir, target_dir, draft_length,
                                               list(eval_prompts), eval_tokens)
        log(f"{spec.mode}: acceptance on {len(eval_prompts)} held-out prompts: "
            f"{result.acceptance['acceptance_rate']:.3f}, "
            f"{result.acceptance['mean_tokens_per_step']:.2f} tokens per step")
    result.write(out_dir / RESULT_FILE)
    log(f"{spec.mode}: trained in {result.train_seconds:.0f}s ({result.steps} steps, "
        f"{result.tokens} tokens; target pass {result.prepare_seconds:.0f}s)")
    return result

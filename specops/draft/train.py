"""Train the draft module a profile asks for: the trainer registry, its one entry point, and the acceptance
of the freshly trained draft, measured by the embedded runtime on held-out prompts."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specops.bench.conversations import read_conversations
from specops.draft.modes import MODE_OF_METHOD
from specops.draft.spec import RESULT_FILE, TrainResult, TrainSpec
from specops.registry import Registry
from specops.run.progress import Progress

Trainer = Callable[..., TrainResult]
TRAINERS: Registry[Trainer] = Registry("training mode")
TRAINERS.register("eagle3", "specops.draft.eagle_train:train_eagle")
TRAINERS.register("eagle", "specops.draft.eagle_train:train_eagle")
TRAINERS.register("medusa", "specops.draft.medusa_train:train_medusa")
TRAINERS.register("distill", "specops.draft.distill:train_distill")
METHOD_OF_MODE = {mode: method for method, mode in MODE_OF_METHOD.items()}


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


def measure_acceptance(mode: str, export_dir: Path, target_dir: Path, draft_length: int,
                       prompts: list[str], max_tokens: int, threads: int = 1) -> dict[str, float]:
    """Greedy-decode `prompts` with the draft; acceptance rate and tokens per verification step."""
    from specops.runtime.engine import DecodingEngine

    engine = DecodingEngine.load(target_dir, METHOD_OF_MODE[mode],
                                 {"draft_dir": str(export_dir), "num_speculative_tokens": draft_length},
                                 threads=threads)
    for prompt in prompts:
        engine.generate_ids(engine.tokenizer(prompt)["input_ids"], max_tokens, ignore_eos=True)
    c = engine.counters.snapshot()
    drafted = max(1, c["num_draft_tokens"])
    return {
        "prompts": float(len(prompts)),
        "acceptance_rate": c["num_accepted_tokens"] / drafted,
        "mean_tokens_per_step": c["num_generated_tokens"] / max(1, c["num_steps"]),
        **{f"accepted_at_{i + 1}": n / max(1, c["num_drafts"]) for i, n in enumerate(c["accepted_per_position"])},
    }

"""Acceptance of a freshly trained draft, measured by the embedded runtime on held-out prompts."""
from __future__ import annotations

from pathlib import Path

from specops.draft.modes import MODE_OF_METHOD

METHOD_OF_MODE = {mode: method for method, mode in MODE_OF_METHOD.items()}


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

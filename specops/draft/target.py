"""Loading the frozen target for training, and the draft vocabulary an EAGLE head predicts."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import torch


def load_target(model_dir: Path, threads: int):
    """(model, tokenizer) in fp32 on CPU, every parameter frozen."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, tokenizer


def pad_id(tokenizer, model) -> int:
    for value in (tokenizer.pad_token_id, model.config.pad_token_id, tokenizer.eos_token_id, 0):
        if value is not None:
            return int(value)
    return 0


def draft_vocabulary(seqs: Sequence[list[int]], size: int, vocab_size: int) -> torch.Tensor:
    """The `size` most frequent target ids in the data (ties: lower id), ascending.

    ModelOpt stores the mapping as d2t[draft_id] = target_id - draft_id; ascending order
    keeps it monotonic, as the published EAGLE-3 drafts do.
    """
    counts = Counter(t for s in seqs for t in s)
    ranked = sorted(range(vocab_size), key=lambda t: (-counts.get(t, 0), t))[:size]
    return torch.tensor(sorted(ranked), dtype=torch.long)

"""Draft/target vocabulary compatibility, checked before any work is done with a draft.

A draft proposes token ids that the target verifies; if the two tokenizers disagree, the ids
mean different strings and the draft is useless (the TensorRT-LLM draft-target tutorial
warns that draft and target must share a tokenizer).
"""
from __future__ import annotations

import json
from pathlib import Path


class VocabularyMismatch(ValueError):
    """The draft's tokenizer or vocabulary is not the target's."""


def check_same_vocabulary(draft_dir: Path, target_tokenizer, target_config) -> None:
    """Raise VocabularyMismatch unless the draft at draft_dir shares the target's tokenizer."""
    from transformers import AutoTokenizer

    draft_dir = Path(draft_dir)
    config_path = draft_dir / "config.json"
    if config_path.exists():
        draft_vocab = json.loads(config_path.read_text()).get("vocab_size")
        if draft_vocab is not None and draft_vocab != target_config.vocab_size:
            raise VocabularyMismatch(
                f"draft {draft_dir}: vocab_size {draft_vocab} != target's {target_config.vocab_size}; "
                "draft and target must share one tokenizer")
    try:
        draft_tokenizer = AutoTokenizer.from_pretrained(str(draft_dir))
    except (OSError, ValueError) as err:
        raise VocabularyMismatch(f"draft {draft_dir}: no tokenizer to compare with the target's ({err})") from None
    compare_tokenizers(draft_tokenizer, target_tokenizer, f"draft {draft_dir}")


def compare_tokenizers(draft_tokenizer, target_tokenizer, label: str = "draft") -> None:
    draft_vocab, target_vocab = draft_tokenizer.get_vocab(), target_tokenizer.get_vocab()
    if draft_vocab == target_vocab:
        return
    differing = sorted(t for t in set(draft_vocab) | set(target_vocab) if draft_vocab.get(t) != target_vocab.get(t))
    raise VocabularyMismatch(
        f"{label}: tokenizer differs from the target's ({len(draft_vocab)} vs {len(target_vocab)} "
        f"entries, {len(differing)} differ, e.g. {differing[:3]}); draft and target must share one tokenizer")

"""Draft-target: a smaller causal LM with the target's tokenizer drafts greedily.

The draft keeps its own KV cache per request. After verification the cache keeps the longest
prefix it shares with the new context (accepted drafts stay cached), and the next proposal
feeds only what the draft has not seen.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from specops.runtime.proposers import DraftOptions, Proposer
from specops.runtime.verify_gemm import use_verify_gemm


@dataclasses.dataclass
class _DraftState:
    cache: Any
    tokens: list[int] = dataclasses.field(default_factory=list)  # what the draft cache holds


class DraftModelProposer(Proposer):
    name = "draft-target"

    @dataclasses.dataclass(frozen=True)
    class Options(DraftOptions):
        label, checkpoint = "draft-target", "the draft model checkpoint"

    def __init__(self, options: Options) -> None:
        from transformers import AutoModelForCausalLM

        super().__init__(options)
        self.draft = AutoModelForCausalLM.from_pretrained(options.draft_dir, dtype=torch.float32).eval()
        # The draft catches up on accepted tokens a few rows at a time, as the target verifies.
        use_verify_gemm(self.draft)

    def bind(self, target, tokenizer) -> None:
        from specops.runtime.vocab import check_same_vocabulary

        check_same_vocabulary(Path(self.options.draft_dir), tokenizer, target.config)

    def start(self, prompt_ids: Sequence[int]) -> _DraftState:
        from transformers import DynamicCache

        return _DraftState(DynamicCache(config=self.draft.config))

    @torch.inference_mode()
    def propose(self, context_ids: Sequence[int], limit: int, state: _DraftState) -> list[int]:
        k = min(self.options.num_speculative_tokens, limit)
        if k <= 0:
            return []
        context = list(context_ids)
        shared = next((i for i, (a, b) in enumerate(zip(state.tokens, context)) if a != b), len(state.tokens))
        # At least the newest token is fed: its logits give the first draft.
        keep = min(shared, len(context) - 1)
        state.cache.crop(keep)
        feed = context[keep:]
        drafts: list[int] = []
        for _ in range(k):
            logits = self.draft(input_ids=torch.tensor([feed], dtype=torch.long),
                                past_key_values=state.cache, use_cache=True, logits_to_keep=1).logits
            drafts.append(int(logits[0, -1].argmax()))
            feed = drafts[-1:]
        # The cache now holds the context and every draft but the last.
        state.tokens = context + drafts[:-1]
        return drafts

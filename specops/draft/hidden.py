"""One frozen pass of the target over the training data, cached for every epoch (offline)."""
from __future__ import annotations

from collections.abc import Sequence

import torch

from specops.draft.sequences import batches


@torch.no_grad()  # not inference_mode: the cached tensors feed autograd later
def cache_hidden_states(model, seqs: Sequence[list[int]], batch_size: int, pad: int,
                        aux_ids: Sequence[int] = (), pad_to: int | None = None) -> list[tuple]:
    """Per batch: (input_ids, mask, final post-norm hidden, concatenated aux layer outputs|None)."""
    cached = []
    for ids, mask in batches(seqs, batch_size, pad, pad_to):
        out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, logits_to_keep=1)
        hs = out.hidden_states
        # hidden_states[i + 1] is layer i's output (what ModelOpt's forward hooks collect);
        # the last entry is after the final norm.
        aux = torch.cat([hs[i + 1] for i in aux_ids], dim=-1).clone() if aux_ids else None
        cached.append((ids, mask, hs[-1].clone(), aux))
    return cached

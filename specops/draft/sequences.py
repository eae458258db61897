"""Training sequences: synthesized conversations tokenized the way the target will see them."""
from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from specops.draft.conversations import Conversation, DataFileError, read_conversations


def load_sequences(path: Path, tokenizer, seq_len: int, seed: int = 0) -> list[list[int]]:
    """Token ids of every conversation in `path`, cut to `seq_len`, in a seeded order."""
    conversations = read_conversations(Path(path))
    seqs = [ids for ids in (_ids(c, tokenizer)[:seq_len] for c in conversations) if len(ids) >= 2]
    if not seqs:
        raise DataFileError(path, "no conversation has two or more tokens to train on")
    random.Random(seed).shuffle(seqs)
    return seqs


def _ids(conversation: Conversation, tokenizer) -> list[int]:
    turns = [{"role": t.role, "content": t.content} for t in conversation.turns]
    if conversation.text_format == "completion":
        # Raw prompt + raw continuation: exactly what the benchmark sends and the runtime sees.
        return list(tokenizer("".join(t["content"] for t in turns))["input_ids"])
    ids = tokenizer.apply_chat_template(turns, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def batches(seqs: Sequence[list[int]], batch_size: int, pad_id: int, pad_to: int | None = None):
    """(input_ids, attention_mask) tensors, right-padded to the batch's longest or to `pad_to`."""
    import torch

    for start in range(0, len(seqs), batch_size):
        chunk = seqs[start:start + batch_size]
        width = pad_to or max(len(s) for s in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, seq in enumerate(chunk):
            ids[row, :len(seq)] = torch.tensor(seq)
            mask[row, :len(seq)] = 1
        yield ids, mask


def token_count(seqs: Sequence[list[int]]) -> int:
    return sum(len(s) for s in seqs)

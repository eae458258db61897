"""Training sequences: completions are tokenized as the benchmark sends prompts, chats templated; the shared
optimizer loop reports its steps to a progress callback."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from specops.bench.conversations import DataFileError
from specops.draft.prepare import batches, load_sequences, run_loop, shuffled_epochs

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from specops.sources.embedded import fetch_embedded

    cache = Path(os.environ.get("SPECOPS_CACHE", REPO_ROOT / ".cache" / "specops"))
    return AutoTokenizer.from_pretrained(str(fetch_embedded(cache, log=lambda m: None).path))


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_completion_is_prompt_then_answer_as_raw_text(tmp_path, tokenizer):
    data = _write(tmp_path / "d.jsonl", [{"id": "a", "text_format": "completion", "conversations": [
        {"role": "user", "content": "def f(x):\n"}, {"role": "assistant", "content": "    return x\n"}]}])
    [seq] = load_sequences(data, tokenizer, seq_len=512)
    assert seq == tokenizer("def f(x):\n    return x\n")["input_ids"]


def test_chat_goes_through_the_chat_template_and_is_cut_to_seq_len(tmp_path, tokenizer):
    turns = [{"role": "user", "content": "hi " * 50}, {"role": "assistant", "content": "hello " * 50}]
    data = _write(tmp_path / "d.jsonl", [{"id": "a", "messages": turns}])
    [seq] = load_sequences(data, tokenizer, seq_len=40)
    full = tokenizer.apply_chat_template(turns, tokenize=True)
    full = list(full["input_ids"] if hasattr(full, "keys") else full)
    assert seq == full[:40] and len(full) > 40


def test_nothing_to_train_on_is_an_error(tmp_path, tokenizer):
    data = _write(tmp_path / "d.jsonl", [{"id": "a", "text_format": "completion", "conversations": [
        {"role": "user", "content": ""}, {"role": "assistant", "content": ""}]}])
    with pytest.raises(DataFileError, match="no conversation has two or more tokens"):
        load_sequences(data, tokenizer, seq_len=16)


def test_batches_pad_to_a_fixed_length_when_asked():
    ids, mask = next(batches([[1, 2, 3], [4]], batch_size=2, pad_id=0, pad_to=6))
    assert ids.tolist() == [[1, 2, 3, 0, 0, 0], [4, 0, 0, 0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]]


def test_progress_follows_the_steps_to_the_end():
    weight = torch.nn.Parameter(torch.zeros(2))
    batches = [torch.ones(2), -torch.ones(2), torch.full((2,), 2.0)]
    seen: list[tuple[float, str]] = []

    def step(batch):
        loss = ((weight - batch) ** 2).sum()
        return loss, {}

    stats = run_loop([weight], step, shuffled_epochs(batches, seed=0), epochs=2, steps_per_epoch=3, max_steps=5,
                     lr=0.1, log=lambda line: None, label="train toy",
                     progress=lambda fraction, note: seen.append((fraction, note)))
    assert stats.steps == 5
    assert [f for f, _ in seen] == [0.2, 0.4, 0.6, 0.8, 1.0]
    assert seen[-1][1].startswith("train toy: step 5/5, loss ")

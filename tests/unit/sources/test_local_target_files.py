"""What a local target directory needs to be served: its config and a tokenizer of any kind transformers loads."""
from __future__ import annotations

import pytest

from specops.sources.schemes import missing_target_files


@pytest.mark.parametrize("tokenizer", ["tokenizer.json", "tokenizer.model", "vocab.json", "cl100k.tiktoken"])
def test_any_tokenizer_kind_serves(tmp_path, tokenizer):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / tokenizer).write_text("x")
    assert missing_target_files(tmp_path) == []


def test_what_is_missing_is_named(tmp_path):
    assert missing_target_files(tmp_path) == [
        "config.json", "a tokenizer (one of tokenizer.json, tokenizer.model, vocab.json, *.tiktoken)"]
    (tmp_path / "tokenizer_config.json").write_text("{}")  # settings, not a vocabulary
    (tmp_path / "config.json").write_text("{}")
    assert missing_target_files(tmp_path) == ["a tokenizer (one of tokenizer.json, tokenizer.model, vocab.json, "
                                              "*.tiktoken)"]

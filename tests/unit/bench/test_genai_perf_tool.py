"""genai-perf's raw export (profile_export.json) read into one sample per request, with a real (tiny, word-level)
tokenizer for genai-perf's own token counting."""
from __future__ import annotations

import json

import pytest

from specops.bench.genai_perf_tool import RAW_EXPORT, request_samples


@pytest.fixture
def tokenizer(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {word: i for i, word in enumerate(["[UNK]", "!", "a", "b", "c", "hello", "world"])}
    words = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=words, unk_token="[UNK]").save_pretrained(tmp_path / "tokenizer")
    return tmp_path / "tokenizer"


def test_a_request_lasts_from_its_start_not_from_its_first_token(tmp_path, tokenizer):
    """Sent at 1.0 s, first token at 1.4 s, last at 1.6 s: latency 0.6 s, ttft 0.4 s (from the first token, a
    request's latency would leave out its prefill and inflate tokens per second)."""
    sent, responses = 1_000_000_000, [1_400_000_000, 1_500_000_000, 1_600_000_000]
    request = {"timestamp": sent, "request_inputs": {"text_input": "hello world"}, "response_timestamps": responses,
               "response_outputs": [{"text_output": f" {word}"} for word in "abc"]}
    export = {"experiments": [{"experiment": {"mode": "concurrency", "value": 1}, "requests": [request]}],
              "version": "", "service_kind": "triton", "endpoint": ""}
    (tmp_path / RAW_EXPORT).write_text(json.dumps(export))
    (sample,) = request_samples(tmp_path / RAW_EXPORT, tokenizer, {"hello world": 0}.get, round_=2)
    assert (sample.prompt, sample.round, sample.output_tokens) == (0, 2, 3)
    assert sample.latency_s == pytest.approx(0.6) and sample.ttft_s == pytest.approx(0.4)

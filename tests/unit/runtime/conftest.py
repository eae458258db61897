"""Fixtures for runtime tests: a tiny random Llama (fast) and the real SmolLM2 (slow)."""
from __future__ import annotations

import pytest
import torch

from specops.runtime.engine import DecodingEngine
from specops.runtime.proposers import make_proposer


class ByteTokenizer:
    """Bytes are tokens 0-255; 256 is EOS, 257 BOS. Decodes like a byte-level BPE would:
    a partial UTF-8 sequence shows as U+FFFD until its last byte arrives."""

    eos_token_id = 256
    bos_token_id = 257

    def __call__(self, text: str) -> dict:
        return {"input_ids": list(text.encode("utf-8"))}

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=False):
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def tiny_llama(vocab_size: int, init: float = 0.5, seed: int = 0, **config):
    """A 2-layer random Llama; a large init makes its next-token distributions peaked."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        initializer_range=init, **config,
    )
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture(scope="session")
def byte_model():
    # init 0.3: peaked enough that greedy has no near-ties, yet the output still depends on
    # far context (at 0.5 the last token dominates and a broken KV cache went unnoticed).
    return tiny_llama(258, init=0.3, bos_token_id=257, eos_token_id=256, pad_token_id=None)


@pytest.fixture
def byte_engine(byte_model):
    """Factory: a fresh engine (fresh counters) on the shared tiny byte-level model."""

    def make(method: str = "none", **options) -> DecodingEngine:
        return DecodingEngine(byte_model, ByteTokenizer(), make_proposer(method, options), method)

    return make


@pytest.fixture(scope="session")
def smollm2_engine(smollm2_dir) -> DecodingEngine:
    return DecodingEngine.load(smollm2_dir, "none", {}, threads=1)


@pytest.fixture
def smollm2_with(smollm2_engine):
    """Factory: an engine with another method sharing the loaded SmolLM2 weights."""

    def make(method: str, **options) -> DecodingEngine:
        proposer = make_proposer(method, options)
        return DecodingEngine(smollm2_engine.model, smollm2_engine.tokenizer, proposer, method)

    return make


@pytest.fixture(scope="session")
def make_tiny_llama():
    return tiny_llama

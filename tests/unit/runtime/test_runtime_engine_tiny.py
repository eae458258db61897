"""Decode-loop mechanics on a tiny random Llama: fast, no download."""
from __future__ import annotations

import threading

import pytest
import torch

from specops.registry import UnknownName
from specops.runtime.engine import DecodingEngine
from specops.runtime.proposers import make_proposer

PROMPTS = ["abcabcabc", "hello hello hello", "xyz", "def f(x):\n    return x\n\ndef f("]
DRAFTY = {"num_speculative_tokens": 4, "prompt_lookup_min": 1, "prompt_lookup_max": 3}


def test_ngram_greedy_equals_plain_greedy(byte_engine):
    plain, spec = byte_engine("none"), byte_engine("ngram", **DRAFTY)
    for prompt in PROMPTS:
        ids = list(prompt.encode())
        assert spec.generate_ids(ids, 40, ignore_eos=True) == plain.generate_ids(ids, 40, ignore_eos=True)
    assert spec.num_drafts > 0 and spec.num_accepted_tokens > 0  # verification really ran
    assert spec.num_steps < plain.num_steps


def test_cached_decoding_equals_recomputing_everything(byte_engine):
    """Ground truth without any KV cache: full forward over the whole context per token."""
    engine = byte_engine("ngram", **DRAFTY)
    ids = list(PROMPTS[3].encode())
    expected = list(ids)
    with torch.inference_mode():
        for _ in range(24):
            logits = engine.model(input_ids=torch.tensor([expected])).logits[0, -1]
            expected.append(int(torch.argmax(logits)))
    assert engine.generate_ids(ids, 24, ignore_eos=True) == expected[len(ids):]
    assert byte_engine("none").generate_ids(ids, 24, ignore_eos=True) == expected[len(ids):]
    assert engine.num_accepted_tokens > 0


@pytest.mark.parametrize("max_tokens", [0, 1, 2, 3, 5, 17])
def test_max_tokens_is_exact(byte_engine, max_tokens):
    engine = byte_engine("ngram", **DRAFTY)
    for prompt in PROMPTS:
        out = engine.generate_ids(list(prompt.encode()), max_tokens, ignore_eos=True)
        assert len(out) == max_tokens
    assert engine.num_generated_tokens == max_tokens * len(PROMPTS)


def test_counters_are_consistent(byte_engine):
    engine = byte_engine("ngram", **DRAFTY)
    total = sum(len(engine.generate_ids(list(p.encode()), 30, ignore_eos=True)) for p in PROMPTS)
    c = engine.counters.snapshot()
    assert c["num_generated_tokens"] == total
    assert c["num_accepted_tokens"] <= c["num_draft_tokens"] <= 4 * c["num_drafts"]
    assert c["num_drafts"] <= c["num_steps"]
    assert sum(c["accepted_per_position"]) == c["num_accepted_tokens"]
    assert c["accepted_per_position"] == sorted(c["accepted_per_position"], reverse=True)
    assert c["num_generated_tokens"] == c["num_steps"] + c["num_accepted_tokens"]
    assert (engine.num_drafts, engine.accepted_per_position) == (c["num_drafts"], c["accepted_per_position"])


def test_stream_joins_to_the_decoded_output(byte_engine):
    engine = byte_engine("ngram", **DRAFTY)
    for prompt in PROMPTS:
        ids = engine.generate_ids(list(prompt.encode()), 40, ignore_eos=True)
        text = "".join(engine.generate(prompt, 40, ignore_eos=True))
        assert text == engine.tokenizer.decode(ids)


def test_stop_string_ends_generation_before_it(byte_engine):
    engine = byte_engine("ngram", **DRAFTY)
    full = "".join(engine.generate(PROMPTS[1], 40, ignore_eos=True))
    stop = full[10:12]
    cut = "".join(engine.generate(PROMPTS[1], 40, ignore_eos=True, stop=[stop]))
    assert cut == full[:full.index(stop)]


def test_eos_ends_generation_unless_ignored(byte_engine):
    first = byte_engine("none").generate_ids(list(b"abcabc"), 12, ignore_eos=True)
    # Pretend the first token that was not produced before is EOS.
    end = next((i for i in range(1, len(first)) if first[i] not in first[:i]), 0)
    engine = byte_engine("ngram", **DRAFTY)
    engine.eos_ids = {first[end]}
    assert engine.generate_ids(list(b"abcabc"), 12) == first[:end + 1]
    assert engine.generate_ids(list(b"abcabc"), 12, ignore_eos=True) == first


def test_empty_prompt_starts_from_bos(byte_engine):
    engine = byte_engine("ngram")
    assert engine.generate_ids([], 3, ignore_eos=True) == engine.generate_ids([257], 3, ignore_eos=True)
    assert "".join(engine.generate("", 5, ignore_eos=True)) == engine.tokenizer.decode(
        engine.generate_ids([257], 5, ignore_eos=True))


def test_seeded_sampling_reproduces(byte_engine):
    engine = byte_engine("ngram", **DRAFTY)
    runs = ["".join(engine.generate("abcabc", 20, temperature=0.8, seed=11, ignore_eos=True))
            for _ in range(2)]
    assert runs[0] == runs[1]


def test_concurrent_requests_match_sequential_ones(byte_engine):
    engine = byte_engine("ngram", **DRAFTY)
    expected = [engine.generate_ids(list(p.encode()), 25, ignore_eos=True) for p in PROMPTS]
    got = [None] * len(PROMPTS)

    def run(i):
        got[i] = engine.generate_ids(list(PROMPTS[i].encode()), 25, ignore_eos=True)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(PROMPTS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected


def test_prompt_longer_than_the_model_is_refused(byte_engine):
    with pytest.raises(ValueError, match="positions"):
        byte_engine("none").generate_ids([1] * 600, 4)


def test_load_rejects_unknown_method_before_loading(tmp_path):
    with pytest.raises(UnknownName, match="allowed: draft-target, eagle, eagle3, medusa, ngram, none$"):
        DecodingEngine.load(tmp_path / "no-model", "eagle9", {})


def test_sampled_speculation_has_the_target_distribution(make_tiny_llama):
    """Sampling with drafts must reproduce the target's own joint law of the next 2 tokens."""
    model = make_tiny_llama(8, init=0.2, seed=3, bos_token_id=None, eos_token_id=None,
                            pad_token_id=None)
    prompt = _prompt_with_likely_draft(model)
    exact = _exact_joint(model, prompt)
    engine = DecodingEngine(model, None, make_proposer("ngram", DRAFTY), "ngram")
    n = 1500
    counts = torch.zeros(8, 8)
    for seed in range(n):
        a, b = engine.generate_ids(prompt, 2, ignore_eos=True, temperature=1.0, seed=seed)
        counts[a, b] += 1
    assert engine.num_accepted_tokens > 100  # drafts were accepted often enough to matter
    tv = 0.5 * (counts / n - exact).abs().sum().item()
    assert tv < 0.06, f"total variation {tv:.3f} from the target's law"


def _prompt_with_likely_draft(model) -> list[int]:
    """[1, 2, x, 1, 2] whose n-gram draft x has a middling chance under the model."""
    best, best_gap = None, 2.0
    for x in range(8):
        prompt = [1, 2, x, 1, 2]
        gap = abs(_next_probs(model, prompt)[x].item() - 0.5)
        if gap < best_gap:
            best, best_gap = prompt, gap
    return best


@torch.inference_mode()
def _next_probs(model, ids):
    return torch.softmax(model(input_ids=torch.tensor([ids])).logits[0, -1], dim=-1)


def _exact_joint(model, prompt):
    first = _next_probs(model, prompt)
    return torch.stack([first[a] * _next_probs(model, prompt + [a]) for a in range(8)])

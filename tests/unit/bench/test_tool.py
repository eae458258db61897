"""Which prompt a sent request carried, in each request format the tools export."""
from __future__ import annotations

import json

from specops.bench.tool import payload_prompt, prompt_index


def test_kserve_and_triton_generate_requests_carry_text_input():
    assert payload_prompt({"text_input": "def f():", "stream": True}) == "def f():"
    assert payload_prompt({"text_input": ["def f():"]}) == "def f():"


def test_openai_payloads_carry_the_prompt_or_the_messages():
    completions = {"payload": json.dumps({"model": "m", "prompt": ["def f():"], "max_tokens": 8})}
    chat = {"payload": json.dumps({"model": "m", "messages": [{"role": "user", "content": "def f():"}]})}
    assert payload_prompt(completions) == payload_prompt(chat) == "def f():"
    assert payload_prompt({"payload": json.dumps({"inputs": "x"})}) is None


def test_prompts_map_back_to_their_first_index_even_when_stripped():
    lookup = prompt_index(["a", "  b\n", "a"])
    assert lookup("a") == 0 and lookup("b") == 1 and lookup("  b\n") == 1 and lookup("c") is None

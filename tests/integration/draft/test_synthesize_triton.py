"""Training data from the real embedded SmolLM2 served by tritonserver: greedy completions, resumable."""
from __future__ import annotations

import time

import pytest

from specops.backends.triton_server import TritonServer
from specops.bench.conversations import read_conversations
from specops.draft.prompt_sources import stdlib_prompts
from specops.draft.synthesize import synthesize
from specops.triton import client
from specops.triton.model_config import python_generate_config
from specops.triton.repository import write_python_model

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def base_endpoint(embedded_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("triton-synthesize")
    write_python_model(root / "repo", python_generate_config("base", model_dir=embedded_model.path, method="none"))
    with TritonServer(root / "repo", root / "triton.log") as server:
        t0 = time.monotonic()
        endpoint = server.wait_ready(300)
        print(f"tritonserver with the embedded base model ready in {time.monotonic() - t0:.1f}s")
        yield endpoint


def test_synthesize_stdlib_prompts_and_resume(base_endpoint, tmp_path):
    items = stdlib_prompts(4, seed=0)
    out = tmp_path / "data" / "synth.jsonl"

    def answer(prompt: str) -> str:  # greedy raw-prompt continuation, what the draft learns
        return client.generate(base_endpoint, "base", prompt, 16, temperature=0.0, timeout_s=120)

    logs: list[str] = []
    t0 = time.monotonic()
    first = synthesize(items, answer, out, concurrency=2, text_format="completion", log=logs.append)
    print(f"4 answers in {time.monotonic() - t0:.1f}s: {logs}")
    assert (first.written, first.reused, first.failed) == (4, 0, [])

    records = {c.id: c for c in read_conversations(out)}
    assert sorted(records) == sorted(item.id for item in items)
    for item in items:
        record = records[item.id]
        assert record.text_format == "completion" and record.source == "stdlib"
        assert [t.role for t in record.turns] == ["user", "assistant"]
        assert record.turns[0].content == item.text
        assert record.turns[1].content.strip(), f"empty answer for {item.id}"
    # The record is the target's own greedy continuation of the raw prompt.
    assert records[items[0].id].turns[1].content == client.generate(base_endpoint, "base", items[0].text, 16)

    asked: list[str] = []
    again = synthesize(items, lambda p: asked.append(p) or "unused", out, concurrency=2,
                       text_format="completion", log=lambda m: None)
    assert asked == [] and (again.written, again.reused) == (0, 4)
    assert len(read_conversations(out)) == 4

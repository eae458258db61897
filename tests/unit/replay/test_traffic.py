"""A recorded log's answered requests (specops/replay/traffic.py) and `specops replay --traffic` through the CLI, the
vLLM venv's worker stood in for (tests/integration/replay runs it): every accepted format, each line's category,
and a log without answers refused naming its line before any work."""
from __future__ import annotations

import json

import pytest

from cli.common import EXIT_PROFILE
from cli.main import main
from specops.replay import run
from specops.replay.traffic import TrafficFileError, read_traffic, worker_requests


def write(tmp_path, *lines) -> object:
    path = tmp_path / "traffic.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


CHAT = {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"},
                     {"role": "assistant", "content": "4"}], "category": "math"}
SHAREGPT = {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}
PAIR = {"prompt": "def add(a, b):\n", "response": "    return a + b\n", "category": "coding"}


def test_every_format_gives_the_request_its_answer_and_its_category(tmp_path):
    records = read_traffic(write(tmp_path, CHAT, SHAREGPT, PAIR))
    assert [(r.messages, r.prompt, r.answer, r.category) for r in records] == [
        ([{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}], None, "4", "math"),
        ([{"role": "user", "content": "hi"}], None, "hello", None),
        (None, "def add(a, b):\n", "    return a + b\n", "coding")]
    assert worker_requests(records)[2] == {"messages": None, "prompt": "def add(a, b):\n",
                                           "answer": "    return a + b\n"}


@pytest.mark.parametrize(("line", "says"), [
    ({"messages": [{"role": "user", "content": "q"}]}, "no answer: the conversation's last message is not the "
                                                       "assistant's"),
    ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "  "}]},
     "the assistant's answer is empty"),
    ({"prompt": "q"}, "no answer: a prompt needs one of ['response', 'completion', 'output', 'answer']"),
    ({"prompt": "q", "completion": ""}, "'completion' is empty"),
    ({"text": "q"}, "expected 'messages', 'conversations' or 'prompt'"),
    ({"messages": [{"role": "assistant", "content": "a"}]}, "an answer without the request it answers"),
])
def test_a_log_line_without_an_answered_request_is_refused_naming_its_line(tmp_path, line, says):
    with pytest.raises(TrafficFileError) as caught:
        read_traffic(write(tmp_path, PAIR, line))
    assert caught.value.line_no == 2 and says in str(caught.value) and str(tmp_path) in str(caught.value)


def test_replay_traffic_tokenizes_the_log_and_replays_each_answer_to_its_end(tmp_path, monkeypatch, capsys):
    asked = []

    def worker(request, say):
        asked.append(request)
        if request["mode"] == "tokenize":
            return {"sequences": [{"prompt": [1, 2], "output": [5, 6, 5, 6]} for _ in request["records"]]}
        return {"results": [[{"steps": 2, "emitted": 3, "drafted_steps": 2, "drafted": 4, "accepted": 1}
                             for _ in request["sequences"]] for _ in request["settings"]]}

    class Target:
        sha256, path, source = "f" * 64, tmp_path, "embedded:smollm2-135m"

    monkeypatch.setattr(run, "run_worker", worker)
    monkeypatch.setattr(run, "fetch", lambda *a, **k: Target)
    monkeypatch.setattr("specops.backends.vllm.cpu.preflight", lambda: [])
    log = write(tmp_path, CHAT, PAIR)
    assert main(["replay", "ngram-vllm-serve-cpu", "--grid", "profile", "--traffic", str(log)]) == 0
    tokenize, simulate = asked
    assert tokenize["records"] == worker_requests(read_traffic(log)) and tokenize["model"] == str(tmp_path)
    assert simulate["length"] is None  # each request replayed to its logged answer's end, nothing past it
    out = capsys.readouterr().out
    assert "2 recorded requests of" in out and "temperature > 0" in out and "by category" in out
    assert "math" in out and "coding" in out


def test_a_bad_log_fails_before_any_replay(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run, "run_worker", lambda *a: pytest.fail("the worker ran"))
    log = write(tmp_path, {"prompt": "q"})
    assert main(["replay", "ngram-vllm-serve-cpu", "--traffic", str(log)]) == EXIT_PROFILE
    assert f"{log}:1: no answer" in capsys.readouterr().err

"""Synthesis: concurrent, resumable, failure accounting; the OpenAI-compatible answerer over real HTTP."""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from specops.bench.conversations import DataFileError, read_conversations
from specops.draft.prompt_sources import PromptItem
from specops.draft.synthesize import EndpointError, openai_answerer, synthesize
from specops.host.processes import pick_free_ports

KEY = "sk-test-0123456789abcdef"
MEET_S = 30.0  # a bound on a hang, not a timed assertion


def _items(n: int) -> list[PromptItem]:
    return [PromptItem(f"p/{i}", "test", f"prompt {i}") for i in range(n)]


class Recorder:
    """A thread-safe answer callable: remembers prompts and the most requests in flight at once."""

    def __init__(self, delay_s: float = 0.0, fail=lambda prompt: False, meet: int = 0):
        self.delay_s, self.fail = delay_s, fail
        self.prompts: list[str] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        # With meet=n, the first requests wait (up to MEET_S) until n are in flight together: an
        # overlap that does not depend on how fast this host starts threads. If n never are, the
        # waiting stops and max_in_flight says so.
        self.meet, self._met = meet, threading.Event()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.meet and self.in_flight >= self.meet:
                self._met.set()
        try:
            if self.meet and not self._met.wait(timeout=MEET_S):
                self.meet = 0  # they never were: wait no more (the test's assertion fails)
            time.sleep(self.delay_s)
            if self.fail(prompt):
                raise ConnectionError(f"refused: {prompt}")
            return f"answer to {prompt}"
        finally:
            with self._lock:
                self.in_flight -= 1


def test_answers_are_written_as_completion_records(tmp_path):
    out = tmp_path / "sub" / "data.jsonl"
    logs: list[str] = []
    result = synthesize(_items(5), Recorder(), out, concurrency=2, text_format="completion", log=logs.append)
    assert (result.path, result.written, result.reused, result.failed, result.empty) == (out, 5, 0, [], 0)
    convs = {c.id: c for c in read_conversations(out)}
    assert sorted(convs) == [f"p/{i}" for i in range(5)]
    assert convs["p/3"].text_format == "completion" and convs["p/3"].source == "test"
    assert [(t.role, t.content) for t in convs["p/3"].turns] == [("user", "prompt 3"), ("assistant", "answer to prompt 3")]
    assert any("5/5 answered" in line and "/s" in line and "ETA" in line for line in logs)


def test_progress_hears_of_every_finished_request_of_this_runs_share(tmp_path):
    out = tmp_path / "d.jsonl"
    synthesize(_items(2), Recorder(), out, concurrency=1, text_format="completion", log=lambda m: None)
    seen: list[tuple[float, str]] = []
    fail = Recorder(fail=lambda prompt: prompt == "prompt 3")
    synthesize(_items(6), fail, out, concurrency=2, text_format="completion", log=lambda m: None,
               progress=lambda fraction, note: seen.append((fraction, note)))
    assert [f for f, _ in seen] == [0.25, 0.5, 0.75, 1.0]  # 4 to do: 2 were already in the file
    assert seen[-1][1] == "4/4 answered (1 failed)"


def test_requests_really_overlap_up_to_concurrency(tmp_path):
    # The first 4 meet (all in flight at once) before any answers; each then takes 0.1 s, in which
    # a fifth request would start if more than 4 ran at once.
    answer = Recorder(delay_s=0.1, meet=4)
    synthesize(_items(12), answer, tmp_path / "d.jsonl", concurrency=4, text_format="chat", log=lambda m: None)
    assert answer.max_in_flight == 4  # 1 if requests ran one by one; never more than asked
    assert len(answer.prompts) == 12


def test_resume_skips_done_ids_and_redoes_a_truncated_last_line(tmp_path):
    out = tmp_path / "d.jsonl"
    synthesize(_items(3), Recorder(), out, concurrency=1, text_format="completion", log=lambda m: None)
    complete = out.read_bytes()
    # An interrupted run: p/2's record was cut mid-write, before its newline.
    out.write_bytes(complete[: complete.rindex(b'{"id": "p/2"')] + b'{"id": "p/2", "source": "te')
    answer, logs = Recorder(), []
    result = synthesize(_items(5), answer, out, concurrency=2, text_format="completion", log=logs.append)
    assert sorted(answer.prompts) == ["prompt 2", "prompt 3", "prompt 4"]
    assert (result.written, result.reused) == (3, 2)
    assert sorted(c.id for c in read_conversations(out)) == [f"p/{i}" for i in range(5)]
    assert any("incomplete last line" in line for line in logs)
    again = Recorder()
    assert synthesize(_items(5), again, out, concurrency=2, text_format="completion", log=lambda m: None).reused == 5
    assert again.prompts == []


def test_a_complete_last_line_without_newline_is_kept(tmp_path):
    out = tmp_path / "d.jsonl"
    synthesize(_items(2), Recorder(), out, concurrency=1, text_format="chat", log=lambda m: None)
    out.write_bytes(out.read_bytes().rstrip(b"\n"))
    answer = Recorder()
    synthesize(_items(3), answer, out, concurrency=1, text_format="chat", log=lambda m: None)
    assert answer.prompts == ["prompt 2"]
    assert len(read_conversations(out)) == 3


def test_a_corrupt_line_before_the_end_is_an_error_not_dropped(tmp_path):
    out = tmp_path / "d.jsonl"
    synthesize(_items(2), Recorder(), out, concurrency=1, text_format="chat", log=lambda m: None)
    lines = out.read_text().splitlines()
    out.write_text("\n".join([lines[0][:10], lines[1]]) + "\n")
    before = out.read_bytes()
    with pytest.raises(DataFileError, match="line 1: not valid JSON"):
        synthesize(_items(3), Recorder(), out, concurrency=1, text_format="chat", log=lambda m: None)
    assert out.read_bytes() == before


def test_mixing_text_formats_in_one_file_is_refused(tmp_path):
    out = tmp_path / "d.jsonl"
    synthesize(_items(1), Recorder(), out, concurrency=1, text_format="completion", log=lambda m: None)
    with pytest.raises(DataFileError, match="'completion' but this run writes 'chat'"):
        synthesize(_items(2), Recorder(), out, concurrency=1, text_format="chat", log=lambda m: None)


def test_failures_and_empty_answers_are_counted(tmp_path):
    out = tmp_path / "d.jsonl"
    answer = Recorder(fail=lambda p: p.endswith(("1", "4")))
    result = synthesize(_items(6), answer, out, concurrency=3, text_format="chat", log=lambda m: None)
    assert result.written == 4 and result.reused == 0
    assert sorted(result.failed) == [("p/1", "ConnectionError: refused: prompt 1"),
                                     ("p/4", "ConnectionError: refused: prompt 4")]
    assert sorted(c.id for c in read_conversations(out)) == ["p/0", "p/2", "p/3", "p/5"]
    # A rerun asks only for what failed; empty answers are recorded but counted.
    retry = synthesize(_items(6), lambda p: "  ", out, concurrency=3, text_format="chat", log=lambda m: None)
    assert (retry.written, retry.reused, retry.empty, retry.failed) == (2, 4, 2, [])


def test_more_than_half_failing_raises_with_the_first_error(tmp_path):
    answer = Recorder(delay_s=0.02, fail=lambda p: p in {"prompt 1", "prompt 2", "prompt 3"})
    with pytest.raises(RuntimeError, match=r"^3 of 4 requests failed \(of 5\); first: ConnectionError: refused: prompt 1$"):
        synthesize(_items(5), answer, tmp_path / "d.jsonl", concurrency=1, text_format="chat", log=lambda m: None)
    # Once more than half have failed the outcome is decided: stop (the window of 2 may have started one more).
    answer = Recorder(delay_s=0.02, fail=lambda p: p != "prompt 0")
    with pytest.raises(RuntimeError, match=r"^11 of 12 requests failed \(of 20\)"):
        synthesize(_items(20), answer, tmp_path / "e.jsonl", concurrency=1, text_format="chat", log=lambda m: None)
    assert len(answer.prompts) <= 12 + 2


def test_a_dead_server_stops_after_the_first_requests(tmp_path):
    answer = Recorder(fail=lambda p: True)
    with pytest.raises(RuntimeError) as info:
        synthesize(_items(1000), answer, tmp_path / "d.jsonl", concurrency=1, text_format="chat", log=lambda m: None)
    # Stops once the first 10 have all failed; requests already queued may finish first.
    match = re.search(r"(\d+) of (\d+) requests failed \(of 1000\)", str(info.value))
    assert match and match[1] == match[2] and 10 <= int(match[1]) <= 12, str(info.value)
    assert len(answer.prompts) <= 10 + 2  # at most the window of 2 * concurrency went on


def test_repeated_prompt_ids_are_refused(tmp_path):
    with pytest.raises(ValueError, match="prompt ids repeat"):
        synthesize(_items(2) * 2, Recorder(), tmp_path / "d.jsonl", concurrency=1, text_format="chat")


# --- openai_answerer against a real HTTP server ---------------------------------------------
class _ChatHandler(BaseHTTPRequestHandler):
    """/v1/chat/completions like vLLM's OpenAI-compatible server; the prompt picks the behaviour."""

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((self.path, dict(self.headers), body))
        prompt = body["messages"][0]["content"]
        if prompt == "echo-auth":  # a misbehaving server that echoes the header back
            self._send(401, {"error": f"bad token {self.headers['Authorization']}"})
        elif prompt == "no-content":
            self._send(200, {"choices": [{"message": {"role": "assistant"}}]})
        elif prompt == "boom":
            self._send(500, {"error": "x" * 500})
        else:
            self._send(200, {"choices": [{"message": {"role": "assistant", "content": f"re: {prompt}"}}]})

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_server():
    """A real local HTTP server standing in for an OpenAI-compatible one such as vLLM (which needs a GPU)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatHandler)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_openai_answerer_sends_a_greedy_chat_request_with_the_key(chat_server):
    base = f"http://127.0.0.1:{chat_server.server_port}/v1/"  # a trailing /v1 is tolerated
    answer = openai_answerer(base, "served-model", max_tokens=33, timeout_s=5, api_key=KEY)
    assert answer("hello") == "re: hello"
    path, headers, body = chat_server.seen[0]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert body == {"model": "served-model", "messages": [{"role": "user", "content": "hello"}],
                    "max_tokens": 33, "temperature": 0}


def test_openai_answerer_without_a_key_sends_no_authorization(chat_server):
    answer = openai_answerer(f"http://127.0.0.1:{chat_server.server_port}", "m", 8, 5)
    assert answer("x") == "re: x"
    assert "Authorization" not in chat_server.seen[0][1]


def test_openai_answerer_errors_are_clear_and_never_show_the_key(chat_server):
    answer = openai_answerer(f"http://127.0.0.1:{chat_server.server_port}", "m", 8, 5, api_key=KEY)
    with pytest.raises(EndpointError) as err:
        answer("echo-auth")
    assert "HTTP 401" in str(err.value) and "bad token Bearer ***" in str(err.value)
    assert KEY not in str(err.value) and KEY not in repr(err.value)
    with pytest.raises(EndpointError, match=r"HTTP 500: \{\"error\": \"x+$") as err:
        answer("boom")
    assert len(str(err.value).split("HTTP 500: ", 1)[1]) == 200
    with pytest.raises(EndpointError, match=r"no choices\[0\]\.message\.content"):
        answer("no-content")


def test_openai_answerer_unreachable_server(chat_server):
    port = chat_server.server_port
    chat_server.shutdown()
    chat_server.server_close()
    answer = openai_answerer(f"http://127.0.0.1:{port}", "m", 8, 5, api_key=KEY)
    with pytest.raises(EndpointError, match="cannot connect") as err:
        answer("x")
    assert KEY not in str(err.value)


def test_openai_answerer_reaches_a_remote_endpoint_through_the_environments_proxy(chat_server, proxy_at):
    proxy_at(chat_server.server_port)  # the chat server answers what the proxy is asked
    answer = openai_answerer("http://synthesis.invalid:8000/v1", "m", 8, 5, api_key=KEY)
    assert answer("x") == "re: x"
    assert chat_server.seen[0][0] == "http://synthesis.invalid:8000/v1/chat/completions"


def test_openai_answerer_on_loopback_ignores_the_environments_proxy(chat_server, proxy_at):
    proxy_at(pick_free_ports("127.0.0.1", 1)[0])  # nothing listens there
    answer = openai_answerer(f"http://localhost:{chat_server.server_port}", "m", 8, 5, api_key=KEY)
    assert answer("x") == "re: x"
    assert chat_server.seen[0][0] == "/v1/chat/completions"


def test_synthesize_through_the_openai_answerer(chat_server, tmp_path):
    answer = openai_answerer(f"http://127.0.0.1:{chat_server.server_port}", "m", 8, 5, api_key=KEY)
    result = synthesize(_items(6), answer, tmp_path / "d.jsonl", concurrency=3, text_format="chat", log=lambda m: None)
    assert result.written == 6
    convs = read_conversations(tmp_path / "d.jsonl")
    assert {c.turns[1].content for c in convs} == {f"re: prompt {i}" for i in range(6)}
    assert all(c.text_format == "chat" for c in convs)

"""Named workloads fetched from their pinned commit (a local HTTP server stands in for GitHub's raw files): checked
against the pinned sha256 before anything is cached, verified on every use, and out of reach named with the field,
the URL and the local copy that replaces it."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from specops.bench import workloads
from specops.bench.workloads import WORKLOADS, WorkloadChecksumError, WorkloadUnreachable, fetch_workload, prompt_file
from specops.sources.integrity import CacheCorruptError
from tests.reference import REFERENCE

SPEC_BENCH = WORKLOADS["spec-bench"]


@pytest.fixture
def origin(monkeypatch):
    """Files served by path on 127.0.0.1; `requests` lists what was asked."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    files: dict[str, bytes] = {}
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            requests.append(self.path)
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(workloads, "RAW_URL", f"http://127.0.0.1:{server.server_address[1]}/{{repository}}/"
                                              "{commit}/{path}")
    yield files, requests
    server.shutdown()
    server.server_close()


def path_of(workload) -> str:
    return f"/{workload.repository}/{workload.commit}/{workload.path}"


def test_a_named_workload_is_fetched_once_at_its_commit_and_verified_on_every_use(tmp_path, origin):
    files, requests = origin
    files[path_of(SPEC_BENCH)] = (REFERENCE / "spec_bench" / "question.jsonl").read_bytes()
    first = prompt_file("spec-bench", tmp_path, log=lambda line: None)
    again = fetch_workload(SPEC_BENCH, tmp_path, log=lambda line: None)
    assert first == again and first.read_bytes() == files[path_of(SPEC_BENCH)]
    assert requests == [path_of(SPEC_BENCH)]  # the second use is a cache hit
    first.write_bytes(first.read_bytes()[:-10])  # damaged in the cache: named, moved aside, never served
    with pytest.raises(CacheCorruptError, match="fetches http://127.0.0.1"):
        fetch_workload(SPEC_BENCH, tmp_path, log=lambda line: None)
    assert fetch_workload(SPEC_BENCH, tmp_path, log=lambda line: None).read_bytes() == files[path_of(SPEC_BENCH)]


def test_a_file_whose_checksum_is_not_the_pin_is_refused_and_nothing_is_cached(tmp_path, origin):
    files, _ = origin
    files[path_of(SPEC_BENCH)] = b'{"turns": ["a question edited upstream"], "category": "qa"}\n'
    with pytest.raises(WorkloadChecksumError) as refused:
        fetch_workload(SPEC_BENCH, tmp_path, log=lambda line: None)
    assert f"not the pinned {SPEC_BENCH.sha256} of spec-bench" in str(refused.value)
    assert str(refused.value).startswith("benchmark.prompts: ")
    assert [p.name for p in (tmp_path / "workloads").iterdir() if not p.name.endswith(".lock")] == []


def test_out_of_reach_names_the_field_the_url_and_the_local_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(workloads, "RAW_URL", "http://127.0.0.1:9/{repository}/{commit}/{path}")
    with pytest.raises(WorkloadUnreachable) as refused:
        fetch_workload(WORKLOADS["mt-bench"], tmp_path, log=lambda line: None)
    message = str(refused.value)
    assert message.startswith("benchmark.prompts: cannot fetch mt-bench from http://127.0.0.1:9/SafeAILab/EAGLE/")
    assert "--set benchmark.prompts=/path/to/question.jsonl" in message and WORKLOADS["mt-bench"].sha256 in message

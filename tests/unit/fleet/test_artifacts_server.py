"""The artifacts server serves run artifacts only, and its alert inbox cannot be written from elsewhere or without
bound (issue 40: `GET /results.db` returned the database; `POST /alerts` took unauthenticated writes at ~18 MB/s).
A real server on a real socket, in a thread."""
from __future__ import annotations

import http.client
import json
import socket
import threading
from contextlib import contextmanager

import pytest

from specops.fleet import artifacts_server
from specops.fleet.artifacts_server import ALERTS_FILE, make_server


@contextmanager
def serving(root, host: str = "127.0.0.1"):
    server = make_server(root, host, 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def request(port: int, path: str, method: str = "GET", body: bytes | None = None, host: str = "127.0.0.1"):
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


@pytest.fixture
def root(tmp_path):
    run = tmp_path / "artifacts" / "ngram-local" / "run-1"
    run.mkdir(parents=True)
    (run / "report.md").write_text("# report\n")
    (tmp_path / "artifacts" / "results.db").write_bytes(b"SQLite format 3\x00 every run's row")
    (tmp_path / "artifacts" / "results.db-wal").write_bytes(b"wal")
    (tmp_path / "artifacts" / ".unrecorded").mkdir()
    (tmp_path / "artifacts" / ".unrecorded" / "uid.json").write_text('{"run_dir": "/x"}')
    return tmp_path / "artifacts"


def test_only_run_artifacts_are_served_or_listed(root):
    (root / ALERTS_FILE).parent.mkdir()
    (root / ALERTS_FILE).write_text('{"metric": "m"}\n')
    with serving(root) as port:
        assert request(port, "/ngram-local/run-1/report.md") == (200, b"# report\n")
        for path in ("/results.db", "/RESULTS.DB", "/results.db-wal", "/.unrecorded/uid.json", "/.unrecorded/",
                     "/%2eunrecorded/uid.json", "/.alerts/alerts.jsonl"):
            status, body = request(port, path)
            assert status == 404 and b"every run" not in body and b"run_dir" not in body, (path, status)
        status, listing = request(port, "/")
        assert status == 200 and b'href="ngram-local/"' in listing
        assert b"results.db" not in listing and b".unrecorded" not in listing and b".alerts" not in listing
        assert request(port, "/alerts") == (200, b'{"metric": "m"}\n')  # the inbox is read at its own path


def test_alerts_are_bounded_in_rate_and_on_disk(root, monkeypatch):
    monkeypatch.setattr(artifacts_server, "ALERTS_PER_MINUTE", 3)
    with serving(root) as port:
        statuses = [request(port, "/alerts", "POST", json.dumps({"n": n}).encode())[0] for n in range(5)]
        assert statuses == [204, 204, 204, 429, 429]
    assert len((root / ALERTS_FILE).read_text().splitlines()) == 3
    monkeypatch.setattr(artifacts_server, "MAX_ALERTS_FILE_BYTES", 10)
    with serving(root) as port:  # a new server, a new minute's count; the file is over its bound
        status, body = request(port, "/alerts", "POST", b'{"n": 9}')
    assert status == 507 and b"move it away" in body
    assert len((root / ALERTS_FILE).read_text().splitlines()) == 3


def _non_loopback_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent: this picks the host's outward address
        return s.getsockname()[0]


def test_alerts_are_taken_from_this_host_only_when_bound_to_every_address(root):
    address = _non_loopback_address()
    assert not address.startswith("127."), f"this test needs a non-loopback address; the host has {address}"
    with serving(root, "0.0.0.0") as port:
        assert request(port, "/alerts", "POST", b'{"from": "here"}')[0] == 204
        status, body = request(port, "/alerts", "POST", b'{"from": "elsewhere"}', host=address)
        assert status == 403 and b"this host only" in body
        assert request(port, "/ngram-local/run-1/report.md", host=address)[0] == 200  # reading stays open
    assert (root / ALERTS_FILE).read_text() == '{"from":"here"}\n'


def test_a_link_out_of_the_root_answers_404_even_into_a_sibling_whose_name_extends_the_roots(root):
    """Confinement is by where a path resolves, and by whole path components: `artifacts-old` is not inside
    `artifacts`, and a link that leads out is out, however its own path reads."""
    for sibling in ("artifacts-old", "elsewhere"):
        outside = root.parent / sibling / "ngram-local" / "run-0"
        outside.mkdir(parents=True)
        (outside / "report.md").write_text(f"# the {sibling} report\n")
        (root / "ngram-local" / f"link-to-{sibling}").symlink_to(outside, target_is_directory=True)
    (root / "ngram-local" / "link-inside").symlink_to(root / "ngram-local" / "run-1", target_is_directory=True)
    with serving(root) as port:
        assert request(port, "/ngram-local/link-inside/report.md") == (200, b"# report\n")  # resolves inside
        for sibling in ("artifacts-old", "elsewhere"):
            status, body = request(port, f"/ngram-local/link-to-{sibling}/report.md")
            assert status == 404 and sibling.encode() not in body, (sibling, status)

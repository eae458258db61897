"""The artifacts server serves run artifacts only, and its alert inbox cannot be written from elsewhere, without its
token or without bound (issue 40: `GET /results.db` returned the database; `POST /alerts` took unauthenticated writes
at ~18 MB/s; issue 51: `results.db.bak` was served, a link named like an artifact led to the database, and a local
loop of tokenless alerts used up the minute's allowance). A real server on a real socket, in a thread."""
from __future__ import annotations

import http.client
import json
import socket
import threading
from contextlib import contextmanager

import pytest

from specops.fleet import alert_inbox
from specops.fleet.alert_inbox import ALERTS_FILE
from specops.fleet.artifacts_server import make_server

TOKEN = "inbox-token-0123"
INBOX = f"/alerts/{TOKEN}"


@contextmanager
def serving(root, host: str = "127.0.0.1"):
    server = make_server(root, host, 0, TOKEN)
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
    database = (root / "results.db").read_bytes()
    for copy in ("results.db.bak", "results.db.old", "results.db~"):  # what "move it aside" leaves
        (root / copy).write_bytes(database)
    run = root / "ngram-local" / "run-1"
    (run / "manifest.json").symlink_to(root / "results.db")  # a link named like an artifact, out to the database
    (root / "ngram-local" / "notes.md").write_text("beside the runs, no run's\n")
    (run / "weights.bin").write_bytes(b"not a kind of file runs write")
    (run / "index.html").write_text("a directory's index is never served in its place")
    with serving(root) as port:
        assert request(port, "/ngram-local/run-1/report.md") == (200, b"# report\n")
        for path in ("/results.db", "/RESULTS.DB", "/results.db-wal", "/results.db.bak", "/results.db.old",
                     "/results.db~", "/.unrecorded/uid.json", "/.unrecorded/", "/%2eunrecorded/uid.json",
                     "/.alerts/alerts.jsonl", "/ngram-local/run-1/manifest.json", "/ngram-local/notes.md",
                     "/ngram-local/run-1/weights.bin"):
            status, body = request(port, path)
            assert status == 404 and b"every run" not in body and b"run_dir" not in body, (path, status)
        status, listing = request(port, "/")
        assert status == 200 and b'href="ngram-local/"' in listing
        assert b"results.db" not in listing and b".unrecorded" not in listing and b".alerts" not in listing
        status, listing = request(port, "/ngram-local/run-1/")
        assert status == 200 and b'href="report.md"' in listing and b"index.html" in listing
        assert b"manifest.json" not in listing and b"weights.bin" not in listing
        assert b"notes.md" not in request(port, "/ngram-local/")[1]
        assert request(port, "/alerts") == (200, b'{"metric": "m"}\n')  # the inbox is read at its own path


def test_alerts_need_the_inbox_token_and_a_flood_without_it_refuses_no_real_alert(root, monkeypatch):
    monkeypatch.setattr(alert_inbox, "ALERTS_PER_MINUTE", 3)
    with serving(root) as port:
        for path in ("/alerts", "/alerts/", "/alerts/not-the-token", f"/alerts/{TOKEN}x", f"/alerts/{TOKEN[:-1]}"):
            status, body = request(port, path, "POST", b'{"from": "anyone on the host"}')
            assert status == 403 and b"the inbox's token" in body and TOKEN.encode() not in body, (path, body)
        assert [request(port, "/alerts/x", "POST", b"{}")[0] for _ in range(10)] == [403] * 10
        assert request(port, INBOX, "POST", b'{"metric": "real"}')[0] == 204  # the flood used up nothing
    assert (root / ALERTS_FILE).read_text() == '{"metric":"real"}\n'


def test_alerts_are_bounded_in_rate_and_on_disk(root, monkeypatch):
    monkeypatch.setattr(alert_inbox, "ALERTS_PER_MINUTE", 3)
    with serving(root) as port:
        statuses = [request(port, INBOX, "POST", json.dumps({"n": n}).encode())[0] for n in range(5)]
        assert statuses == [204, 204, 204, 429, 429]
    assert len((root / ALERTS_FILE).read_text().splitlines()) == 3
    monkeypatch.setattr(alert_inbox, "MAX_ALERTS_FILE_BYTES", 10)
    with serving(root) as port:  # a new server, a new minute's count; the file is over its bound
        status, body = request(port, INBOX, "POST", b'{"n": 9}')
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
        assert request(port, INBOX, "POST", b'{"from": "here"}')[0] == 204
        status, body = request(port, INBOX, "POST", b'{"from": "elsewhere"}', host=address)
        assert status == 403 and b"this host only" in body
        assert request(port, "/ngram-local/run-1/report.md", host=address)[0] == 200  # reading stays open
    assert (root / ALERTS_FILE).read_text() == '{"from":"here"}\n'


def test_no_symbolic_link_is_followed_out_of_the_root_or_within_it(root):
    """Runs write no links: a link out (even into a sibling whose name extends the root's) or within the root is no
    run's artifact, however its own path reads."""
    for sibling in ("artifacts-old", "elsewhere"):
        outside = root.parent / sibling / "ngram-local" / "run-0"
        outside.mkdir(parents=True)
        (outside / "report.md").write_text(f"# the {sibling} report\n")
        (root / "ngram-local" / f"link-to-{sibling}").symlink_to(outside, target_is_directory=True)
    (root / "ngram-local" / "link-inside").symlink_to(root / "ngram-local" / "run-1", target_is_directory=True)
    with serving(root) as port:
        assert request(port, "/ngram-local/link-inside/report.md")[0] == 404
        assert b"link-" not in request(port, "/ngram-local/")[1]
        for sibling in ("artifacts-old", "elsewhere"):
            status, body = request(port, f"/ngram-local/link-to-{sibling}/report.md")
            assert status == 404 and sibling.encode() not in body, (sibling, status)

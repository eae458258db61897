"""specops.http_client against real HTTP servers on 127.0.0.1 (and a real one standing in for a proxy)."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from specops import http_client
from specops.host.processes import pick_free_ports
from specops.http_client import Client, HttpError, NoAnswer, StatusError, get_json, get_text, http_ok, post_json

KEY = "sk-test-0123456789abcdef"


class _Handler(BaseHTTPRequestHandler):
    """The path picks the answer; every request line is recorded (a proxy sees absolute URLs there)."""

    def do_GET(self):  # noqa: N802 - http.server's name
        self.server.seen.append(self.path)
        if self.server.proxy:
            self._send(200, b"via proxy")
        elif self.path == "/ok":
            self._send(200, b"fine")
        elif self.path == "/empty":
            self._send(204, b"")
        elif self.path.startswith("/status/"):
            self._send(int(self.path.rsplit("/", 1)[1]), b"x" * 500)
        elif self.path == "/slow":
            self.server.release.wait(10)
            self._send(200, b"late")
        elif self.path == "/echo-auth":  # a misbehaving server: the header back, with the key across the cut
            self._send(401, b"y" * 180 + f" got {self.headers['Authorization']}".encode())
        else:
            self._send(404, b"no such path")

    def do_POST(self):  # noqa: N802 - http.server's name
        self.server.seen.append(self.path)
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        answer = {"path": self.path, "content_type": self.headers["Content-Type"], "body": json.loads(raw),
                  "x_extra": self.headers.get("X-Extra")}
        self._send(200, json.dumps(answer).encode())

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def _serve(proxy: bool = False):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.seen, server.proxy, server.release = [], proxy, threading.Event()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    return server, thread


def _stop(server, thread) -> None:
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def server():
    server, thread = _serve()
    yield server
    _stop(server, thread)


@pytest.fixture
def proxy():
    """A live server that answers every request as a forward proxy would be asked (absolute URL)."""
    server, thread = _serve(proxy=True)
    yield server
    _stop(server, thread)


def _base(server) -> str:
    return f"http://127.0.0.1:{server.server_port}"


def test_json_round_trip(server):
    body = {"prompt": "héllo ✓", "max_tokens": 3, "nested": [1, 2.5, None, True]}
    out = post_json(f"{_base(server)}/v1/completions", body, 5, headers={"X-Extra": "yes"})
    assert out == {"path": "/v1/completions", "content_type": "application/json", "body": body, "x_extra": "yes"}
    assert get_json(f"{_base(server)}/empty", 5) is None  # an empty body


def test_get_text_and_http_ok(server):
    assert get_text(f"{_base(server)}/ok", 5) == "fine"
    assert http_ok(f"{_base(server)}/ok") and http_ok(f"{_base(server)}/empty")
    assert not http_ok(f"{_base(server)}/status/503")
    assert not http_ok(f"{_base(server)}/status/404")


def test_a_status_outside_2xx_names_the_url_status_and_the_start_of_the_body(server):
    url = f"{_base(server)}/status/500"
    with pytest.raises(StatusError) as err:
        get_text(url, 5)
    assert err.value.status == 500
    assert str(err.value) == f"{url}: HTTP 500: {'x' * http_client.ERROR_BODY_CHARS}"


def test_connection_refused_is_an_error_naming_the_url():
    port = pick_free_ports("127.0.0.1", 1)[0]
    url = f"http://127.0.0.1:{port}/health"
    assert not http_ok(url)
    with pytest.raises(HttpError, match=rf"^{url}: cannot connect \(") as err:
        get_text(url, 5)
    assert not isinstance(err.value, (StatusError, TimeoutError))


def test_a_silent_server_times_out_after_the_calls_timeout(server):
    url = f"{_base(server)}/slow"
    started = time.monotonic()
    with pytest.raises(NoAnswer, match=rf"^{url}: no answer within 0.3s$") as err:
        get_text(url, 0.3)
    elapsed = time.monotonic() - started
    assert isinstance(err.value, TimeoutError)
    assert 0.25 < elapsed < 5  # the server holds the answer for 10 s
    assert not http_ok(url, 0.3)


def test_a_secret_header_echoed_back_never_reaches_the_message(server):
    url = f"{_base(server)}/echo-auth"
    with pytest.raises(StatusError) as err:
        Client().text("GET", url, 5, headers={"Authorization": f"Bearer {KEY}"})
    # Cut before redacting, the message would end in the key's first 8 characters.
    assert str(err.value) == f"{url}: HTTP 401: {'y' * 180} got Bearer ***"
    assert KEY[:4] not in repr(err.value)


def test_loopback_calls_never_use_the_environments_proxy(server, proxy_at):
    proxy_at(pick_free_ports("127.0.0.1", 1)[0])  # nothing listens there
    # A fresh process: the shared client is made while the proxy is set, as in a worker that has one.
    script = ("from specops.http_client import get_text, http_ok, post_json; "
              f"print(get_text('{_base(server)}/ok', 5), post_json('{_base(server)}/x', {{'a': 1}}, 5)['body'], "
              f"http_ok('http://localhost:{server.server_port}/ok'))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split() == ["fine", "{'a':", "1}", "True"]
    assert server.seen == ["/ok", "/x", "/ok"]


def test_a_direct_client_skips_the_proxy_whatever_the_host(proxy, proxy_at):
    proxy_at(proxy.server_port)
    with pytest.raises(HttpError, match="cannot connect"):  # straight to a name that does not resolve
        Client().text("GET", "http://remote.invalid/v1/models", 5)
    assert proxy.seen == []


def test_an_env_proxy_client_sends_a_remote_url_through_the_proxy(proxy, proxy_at, monkeypatch):
    proxy_at(proxy.server_port)
    assert Client(env_proxy=True).text("GET", "http://remote.invalid/v1/models", 5) == "via proxy"
    assert proxy.seen == ["http://remote.invalid/v1/models"]
    monkeypatch.setenv("NO_PROXY", "remote.invalid")
    monkeypatch.setenv("no_proxy", "remote.invalid")
    with pytest.raises(HttpError, match="cannot connect"):
        Client(env_proxy=True).text("GET", "http://remote.invalid/v1/models", 5)
    assert len(proxy.seen) == 1


@pytest.mark.parametrize(("url", "loopback"), [
    ("http://127.0.0.1:8000/v1", True), ("http://127.0.0.2:8000", True), ("http://localhost:1", True),
    ("http://[::1]:8000/", True), ("http://10.0.0.5:8000", False), ("https://api.example.com/v1", False),
])
def test_is_loopback(url, loopback):
    assert http_client.is_loopback(url) is loopback

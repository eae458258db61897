"""HTTP on httpx: our own servers, never through a proxy, and a user's remote endpoint through the
environment's proxy settings.

Errors name the URL. A secret sent in a request header never reaches a message: a server that echoes the
Authorization header back in its error body has the token replaced by ***.
"""
from __future__ import annotations

import functools
import ipaddress
import json
import ssl
from contextlib import closing
from typing import Any

import httpx

ERROR_BODY_CHARS = 200  # of a failed answer's body, in the error message
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key"})


class HttpError(RuntimeError):
    """A request that got no usable answer (cannot connect, broken answer, or a status outside 2xx)."""


class StatusError(HttpError):
    """The server answered with a status outside 2xx."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class NoAnswer(HttpError, TimeoutError):
    """Nothing within the timeout, which bounds the connect and each wait for bytes, not the whole answer."""


class Client:
    """One httpx client, shared by threads: a synthesis run sends hundreds of requests at once through one.

    env_proxy=False never uses a proxy: our servers are reached directly whatever address they listen on.
    env_proxy=True honours HTTP_PROXY / HTTPS_PROXY / NO_PROXY as they are when the Client is made.
    """

    def __init__(self, *, env_proxy: bool = False):
        self._client = httpx.Client(
            trust_env=env_proxy,
            # The system's CA store, which urllib trusted; httpx on its own trusts only certifi's bundle.
            verify=ssl.create_default_context(),
            follow_redirects=True,  # as urllib did
            # No cap on connections (httpx queues past 100, and a synthesis run keeps more in flight), and
            # none kept alive: our servers restart on the same ports, and a kept connection the server has
            # closed fails the next request.
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
        )

    def text(self, method: str, url: str, timeout_s: float, *, body: Any = None,
             headers: dict[str, str] | None = None) -> str:
        """The answer's body as text (undecodable bytes replaced); `body`, when given, is sent as JSON."""
        return self.content(method, url, timeout_s, body=body, headers=headers).decode("utf-8", "replace")

    def content(self, method: str, url: str, timeout_s: float, *, body: Any = None,
                headers: dict[str, str] | None = None) -> bytes:
        """The answer's body; `body`, when given, is sent as JSON."""
        headers = dict(headers or {})
        content = None
        if body is not None:
            # json.dumps ourselves: httpx's json= refuses NaN, which Python's json writes.
            content = json.dumps(body).encode()
            headers = {"Content-Type": "application/json", **headers}
        try:
            response = self._client.request(method, url, content=content, headers=headers, timeout=timeout_s)
        except httpx.TimeoutException:
            raise NoAnswer(f"{url}: no answer within {timeout_s:g}s") from None
        except (httpx.ConnectError, httpx.ProxyError) as exc:
            raise HttpError(_redact(f"{url}: cannot connect ({exc})", headers)) from None
        except httpx.HTTPError as exc:
            raise HttpError(_redact(f"{url}: {type(exc).__name__} ({exc})", headers)) from None
        except httpx.InvalidURL as exc:  # not an HTTPError in httpx
            raise HttpError(f"{url}: not a URL ({exc})") from None
        if not response.is_success:  # the body redacted first: a cut must not expose part of a key
            shown = _redact(response.content.decode("utf-8", "replace"), headers)[:ERROR_BODY_CHARS]
            raise StatusError(f"{url}: HTTP {response.status_code}: {shown}", response.status_code)
        return response.content

    def close(self) -> None:
        self._client.close()


def is_loopback(url: str) -> bool:
    """The URL's host is this machine's loopback (localhost, 127.0.0.0/8, ::1)."""
    try:
        host = httpx.URL(url).host
    except httpx.InvalidURL:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.cache
def _direct() -> Client:
    return Client()


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    """GET `url` from one of our servers answers 2xx (False while it cannot be reached or answers otherwise)."""
    try:
        _direct().text("GET", url, timeout_s)
    except HttpError:
        return False
    return True


def get_text(url: str, timeout_s: float) -> str:
    return _direct().text("GET", url, timeout_s)


def get_json(url: str, timeout_s: float) -> Any:
    """GET one of our servers' JSON; an empty body is None."""
    return json.loads(get_text(url, timeout_s) or "null")


def post_json(url: str, body: Any, timeout_s: float, headers: dict[str, str] | None = None) -> Any:
    """POST `body` as JSON to one of our servers; their answer, parsed."""
    return json.loads(_direct().text("POST", url, timeout_s, body=body, headers=headers))


def download(url: str, timeout_s: float, headers: dict[str, str] | None = None) -> bytes:
    """GET a remote file (GitHub's, PyPI's) through the environment's proxy settings: its bytes."""
    with closing(Client(env_proxy=True)) as client:
        return client.content("GET", url, timeout_s, headers=headers)


def _redact(text: str, headers: dict[str, str]) -> str:
    for name, value in headers.items():
        if name.lower() in _SECRET_HEADERS:
            secret = value.split(" ", 1)[-1]  # "Bearer <token>": the scheme is no secret
            if secret:
                text = text.replace(secret, "***")
    return text

"""The artifacts server's alert inbox: `POST /alerts/<token>` appends the JSON body as one line to
<root>/.alerts/alerts.jsonl, where the regression automation's webhook lands when no other URL is configured.

Only a sender that holds the inbox's token is taken: the alert block `make up` saves posts to the inbox's URL with
the token in its path (kept secret by the block, shown masked, as a Slack webhook's), and the token lives in a file
only this host's user reads (`specops serve-artifacts --token-file`). Without it, anyone on the host could post: 60
alerts a minute from a local loop filled the minute's allowance and a real alert was refused (issue 51). Also taken
from this host only (the automation's worker posts over loopback), at most ALERTS_PER_MINUTE of them, and none once
the file holds MAX_ALERTS_FILE_BYTES (the disk the runs need is not an inbox's).
"""
from __future__ import annotations

import hmac
import ipaddress
import json
import os
import re
import secrets
import threading
import time
from http import HTTPStatus
from pathlib import Path

ALERTS_PATH = "/alerts"
ALERTS_FILE = Path(".alerts") / "alerts.jsonl"
DEFAULT_TOKEN_FILE = Path(".alerts") / "token"  # under the root: a hidden entry, never served
MAX_ALERT_BYTES = 64 * 1024
MAX_ALERTS_FILE_BYTES = 16 * 1024 * 1024  # ~16k alerts of 1 KiB: years of nightly regressions
ALERTS_PER_MINUTE = 60


class Refused(Exception):
    """An alert not stored: the HTTP status and why."""

    def __init__(self, status: HTTPStatus, why: str):
        super().__init__(why)
        self.status, self.why = status, why


def read_or_create_token(path: Path) -> str:
    """The inbox's token from `path`, made (readable by this user only) when the file is missing or empty."""
    path = Path(path)
    if path.is_file() and (token := path.read_text().strip()):
        return token
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


def inbox_url(url: str, token_file: Path) -> str:
    """`url` (the inbox, http://host:port/alerts) with the token of `token_file` as its last path segment."""
    token = Path(token_file).read_text().strip()
    if not token:
        raise ValueError(f"{token_file} holds no token")
    return f"{url.rstrip('/')}/{token}"


def is_inbox(path: str) -> bool:
    return path.rstrip("/") == ALERTS_PATH or path.startswith(ALERTS_PATH + "/")


def masked(text: str) -> str:
    """A request line (or any text) with the inbox's token shown as ***: the server's log names no secret."""
    return re.sub(rf"({ALERTS_PATH}/)[^/\s?#]+", r"\1***", text)


class Inbox:
    def __init__(self, root: Path, token: str):
        self.path, self.token = Path(root) / ALERTS_FILE, token
        self.lock = threading.Lock()  # one append at a time: lines never interleave
        self.times: list[float] = []  # monotonic times of the last minute's stored alerts

    def check_sender(self, client: str, path: str) -> None:
        """Refused unless the request comes from this host and carries the token."""
        if not ipaddress.ip_address(client.removeprefix("::ffff:")).is_loopback:
            raise Refused(HTTPStatus.FORBIDDEN, "alerts are taken from this host only")
        given = path.rstrip("/")[len(ALERTS_PATH) + 1:] if path.startswith(ALERTS_PATH + "/") else ""
        if not self.token or not hmac.compare_digest(given.encode(), self.token.encode()):
            raise Refused(HTTPStatus.FORBIDDEN, f"an alert needs the inbox's token: POST {ALERTS_PATH}/<token>, as the "
                          "alert block `make up` saves posts (the token is in the file `specops serve-artifacts "
                          "--token-file` names)")

    def store(self, body: bytes) -> str:
        """The alert's line, appended to the inbox; Refused when it is no JSON or the inbox takes no more."""
        try:
            line = json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=False)
        except ValueError as err:
            raise Refused(HTTPStatus.BAD_REQUEST, f"an alert is a JSON body: {err}") from None
        with self.lock:
            self._count()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")
        return line

    def _count(self) -> None:
        now = time.monotonic()
        self.times[:] = [t for t in self.times if now - t < 60]
        if len(self.times) >= ALERTS_PER_MINUTE:
            raise Refused(HTTPStatus.TOO_MANY_REQUESTS, f"at most {ALERTS_PER_MINUTE} alerts a minute")
        if self.path.is_file() and self.path.stat().st_size >= MAX_ALERTS_FILE_BYTES:
            raise Refused(HTTPStatus.INSUFFICIENT_STORAGE, f"the alert inbox {self.path} holds "
                          f"{MAX_ALERTS_FILE_BYTES} bytes: move it away to take more")
        self.times.append(now)

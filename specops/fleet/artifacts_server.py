"""The artifacts root over HTTP, read-only, and the default alert inbox (`specops serve-artifacts`).

Prefect's UI shows a markdown artifact's images and opens its links only over http(s): a browser refuses
file:// URLs from a web page. `make up` starts this server on the artifacts root and hands its URL to the
deployments (SPECOPS_ARTIFACTS_URL); specops/report/writer.py turns a run's files into URLs under it.

    GET/HEAD /<path>   a run artifact or a directory listing under the root; nothing outside it (`..` and
                       symlinks that resolve elsewhere answer 404), and nothing that is not a run's artifact:
                       hidden entries (.alerts/, .unrecorded/) and the results database (results.db: every run's
                       row) answer 404 and are left out of listings
    POST /alerts       the JSON body (at most MAX_ALERT_BYTES) appended as one line to
                       <root>/.alerts/alerts.jsonl: where the regression automation's webhook lands
                       when no other URL is configured. Taken from this host only (the automation's
                       worker posts over loopback; a server bound to 0.0.0.0 for the UI takes no writes
                       from elsewhere), at most ALERTS_PER_MINUTE, and refused once the file holds
                       MAX_ALERTS_FILE_BYTES (the disk the runs need is not an inbox's)
    GET /alerts        the alerts received, newest last
"""
from __future__ import annotations

import html
import ipaddress
import json
import os
import sys
import threading
import time
import urllib.parse
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path

ALERTS_PATH = "/alerts"
ALERTS_FILE = Path(".alerts") / "alerts.jsonl"
MAX_ALERT_BYTES = 64 * 1024
SHOWN_ALERT_BYTES = 1024 * 1024  # GET /alerts shows the newest this many bytes of the file
MAX_ALERTS_FILE_BYTES = 16 * 1024 * 1024  # ~16k alerts of 1 KiB: years of nightly regressions
ALERTS_PER_MINUTE = 60
# What is not a run's artifact, though it lies under the root: the results database (and SQLite's side files)
NOT_ARTIFACTS = (".db", ".db-journal", ".db-wal", ".db-shm", ".sqlite", ".sqlite3")
TYPES = {".png": "image/png", ".html": "text/html; charset=utf-8", ".md": "text/markdown; charset=utf-8",
         ".csv": "text/csv; charset=utf-8", ".json": "application/json", ".jsonl": "text/plain; charset=utf-8",
         ".log": "text/plain; charset=utf-8", ".txt": "text/plain; charset=utf-8", ".yaml": "text/plain; charset=utf-8",
         ".svg": "image/svg+xml"}


class ArtifactsHandler(SimpleHTTPRequestHandler):
    server_version = "specops-artifacts"
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **TYPES}
    alert_lock = threading.Lock()  # one append at a time: lines never interleave

    def end_headers(self) -> None:
        # A run's report and plots are rewritten in place (a regression's trend.png each night): never stale.
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def _path_only(self) -> str:
        return self.path.split("?", 1)[0].split("#", 1)[0]

    def _inside_root(self) -> bool:
        root = os.path.realpath(self.directory)
        target = os.path.realpath(self.translate_path(self.path))  # translate_path already drops `..` segments
        return target == root or target.startswith(root + os.sep)

    def send_head(self):
        if self._path_only().rstrip("/") == ALERTS_PATH:
            return self._alerts_head()
        if not self._inside_root():
            self.send_error(HTTPStatus.NOT_FOUND, "outside the artifacts root")
            return None
        parts = urllib.parse.unquote(self._path_only()).split("/")
        if not all(is_artifact(part) for part in parts if part):
            self.send_error(HTTPStatus.NOT_FOUND, "not a run artifact")
            return None
        return super().send_head()

    def list_directory(self, path):
        """The directory's artifacts only (http.server's own listing would show every entry)."""
        try:
            names = sorted((n for n in os.listdir(path) if is_artifact(n)), key=str.lower)
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, "No permission to list directory")
            return None
        slash = {n: "/" if os.path.isdir(os.path.join(path, n)) else "" for n in names}
        items = "".join(f'<li><a href="{urllib.parse.quote(n + slash[n])}">{html.escape(n + slash[n])}</a></li>\n'
                        for n in names)
        title = html.escape(urllib.parse.unquote(self._path_only()))
        body = f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{title}</title></head>" \
               f"<body><h1>{title}</h1><ul>\n{items}</ul></body></html>\n".encode()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return BytesIO(body)

    def _alerts_head(self) -> BytesIO:
        path = Path(self.directory) / ALERTS_FILE
        body = b""
        if path.is_file():
            with path.open("rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(max(0, size - SHOWN_ALERT_BYTES))
                body = f.read()
            if size > SHOWN_ALERT_BYTES:  # from the first whole line
                body = body.partition(b"\n")[2]
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return BytesIO(body)

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        if self._path_only().rstrip("/") != ALERTS_PATH:
            self.send_error(HTTPStatus.NOT_FOUND, f"POST goes to {ALERTS_PATH} only; the rest is read-only")
            return
        if not ipaddress.ip_address(self.client_address[0].removeprefix("::ffff:")).is_loopback:
            self.send_error(HTTPStatus.FORBIDDEN, "alerts are taken from this host only")
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.send_error(HTTPStatus.LENGTH_REQUIRED, "an alert needs a Content-Length")
            return
        if int(length) > MAX_ALERT_BYTES:
            self.close_connection = True  # the body stays unread
            self.send_error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"an alert is at most {MAX_ALERT_BYTES} bytes")
            return
        body = self.rfile.read(int(length))
        try:
            alert = json.loads(body)
        except ValueError as err:
            self.send_error(HTTPStatus.BAD_REQUEST, f"an alert is a JSON body: {err}")
            return
        line = json.dumps(alert, separators=(",", ":"), ensure_ascii=False)
        path = Path(self.directory) / ALERTS_FILE
        with self.alert_lock:
            refused = self._refused(path)
            if refused is None:
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8") as f:
                    f.write(line + "\n")
        if refused is not None:
            self.send_error(*refused)
            return
        self.log_message("alert stored in %s: %s", path, line[:300])
        self.send_response(HTTPStatus.NO_CONTENT)
        self.end_headers()

    def _refused(self, path: Path) -> tuple[HTTPStatus, str] | None:
        """Why this alert is not stored (too many lately, the inbox full), or None; counts it when stored."""
        now, times = time.monotonic(), self.server.alert_times  # type: ignore[attr-defined]
        times[:] = [t for t in times if now - t < 60]
        if len(times) >= ALERTS_PER_MINUTE:
            return HTTPStatus.TOO_MANY_REQUESTS, f"at most {ALERTS_PER_MINUTE} alerts a minute"
        if path.is_file() and path.stat().st_size >= MAX_ALERTS_FILE_BYTES:
            return HTTPStatus.INSUFFICIENT_STORAGE, f"the alert inbox {path} holds {MAX_ALERTS_FILE_BYTES} bytes: " \
                                                    "move it away to take more"
        times.append(now)
        return None

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's signature
        sys.stderr.write(f"{self.address_string()} {format % args}\n")
        sys.stderr.flush()


def is_artifact(name: str) -> bool:
    """Whether an entry under the root is served: not hidden, not the results database."""
    return not name.startswith(".") and not name.lower().endswith(NOT_ARTIFACTS)


def make_server(root: Path, host: str = "127.0.0.1", port: int = 4201) -> ThreadingHTTPServer:
    """A server bound to host:port (port 0: any free one) serving `root`, not yet serving: serve_forever()."""
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    # daemon_threads (ThreadingHTTPServer's default): a slow client never holds the exit
    server = ThreadingHTTPServer((host, port), partial(ArtifactsHandler, directory=str(root)))
    server.alert_times = []  # type: ignore[attr-defined]  # monotonic times of the last minute's alerts
    return server

"""The artifacts root over HTTP, read-only, and the default alert inbox (`specops serve-artifacts`).

Prefect's UI shows a markdown artifact's images and opens its links only over http(s): a browser refuses
file:// URLs from a web page. `make up` starts this server on the artifacts root and hands its URL to the
deployments (SPECOPS_ARTIFACTS_URL); specops/report/writer.py turns a run's files into URLs under it.

    GET/HEAD /<path>   a file or a directory listing under the root; nothing outside it (`..` and
                       symlinks that resolve elsewhere answer 404)
    POST /alerts       the JSON body (at most MAX_ALERT_BYTES) appended as one line to
                       <root>/.alerts/alerts.jsonl: where the regression automation's webhook lands
                       when no other URL is configured
    GET /alerts        the alerts received, newest last
"""
from __future__ import annotations

import json
import os
import sys
import threading
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path

ALERTS_PATH = "/alerts"
ALERTS_FILE = Path(".alerts") / "alerts.jsonl"
MAX_ALERT_BYTES = 64 * 1024
SHOWN_ALERT_BYTES = 1024 * 1024  # GET /alerts shows the newest this many bytes of the file
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
        return super().send_head()

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
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")
        self.log_message("alert stored in %s: %s", path, line[:300])
        self.send_response(HTTPStatus.NO_CONTENT)
        self.end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's signature
        sys.stderr.write(f"{self.address_string()} {format % args}\n")
        sys.stderr.flush()


def make_server(root: Path, host: str = "127.0.0.1", port: int = 4201) -> ThreadingHTTPServer:
    """A server bound to host:port (port 0: any free one) serving `root`, not yet serving: serve_forever()."""
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    # daemon_threads (ThreadingHTTPServer's default): a slow client never holds the exit
    return ThreadingHTTPServer((host, port), partial(ArtifactsHandler, directory=str(root)))

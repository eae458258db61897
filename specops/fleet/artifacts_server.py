"""The artifacts root over HTTP, read-only, and the default alert inbox (`specops serve-artifacts`).

Prefect's UI shows a markdown artifact's images and opens its links only over http(s): a browser refuses
file:// URLs from a web page. `make up` starts this server on the artifacts root and hands its URL to the
deployments (SPECOPS_ARTIFACTS_URL); specops/report/writer.py turns a run's files into URLs under it.

    GET/HEAD /<path>   a file a run wrote as an artifact, or a directory listing of them. An allowlist by what runs
                       write, not a blocklist of names (issue 51: `results.db.bak`, `.old` and `~`, copies the corrupt
                       database's hint asks for, were served): a file of a kind runs write (ARTIFACT_TYPES: reports,
                       plots, tables, manifests, logs, the rendered configs) inside a run's directory, two levels or
                       more below the root (<profile>/<run>/, trends/<profile>/, compare/<id>/), where nothing but
                       runs writes; never a file at the root's own levels (the results database and its copies live
                       there), a hidden entry (.alerts/, .unrecorded/), nor anything reached through a symbolic link
                       (a link named like an artifact led out to the database). Everything else answers 404 and is
                       left out of listings.
    POST /alerts/<token>  the alert inbox (specops/fleet/alert_inbox.py)
    GET /alerts        the alerts received, newest last
"""
from __future__ import annotations

import html
import os
import stat
import sys
import urllib.parse
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path

from specops.fleet.alert_inbox import ALERTS_FILE, ALERTS_PATH, MAX_ALERT_BYTES, Inbox, Refused, is_inbox, masked

SHOWN_ALERT_BYTES = 1024 * 1024  # GET /alerts shows the newest this many bytes of the file
# What runs write under their directories, by kind (the rendered model repository's configs included), and how
# each is served; nothing else is.
ARTIFACT_TYPES = {
    ".png": "image/png", ".svg": "image/svg+xml", ".html": "text/html; charset=utf-8",
    ".md": "text/markdown; charset=utf-8", ".csv": "text/csv; charset=utf-8", ".json": "application/json",
    ".jsonl": "text/plain; charset=utf-8", ".log": "text/plain; charset=utf-8", ".txt": "text/plain; charset=utf-8",
    ".yaml": "text/plain; charset=utf-8", ".pbtxt": "text/plain; charset=utf-8", ".py": "text/plain; charset=utf-8"}
RUN_DEPTH = 2  # a run's directory lies this many levels below the root: <profile>/<run-id>, trends/<profile>


def artifact_kind(parts: tuple[str, ...], is_dir: bool) -> bool:
    """Whether a path below the root (its components) may be served: a directory on the way to runs' files, or a
    file of a kind runs write inside a run's directory; nothing hidden."""
    if any(part.startswith(".") for part in parts):
        return False
    return is_dir or (len(parts) > RUN_DEPTH and Path(parts[-1]).suffix.lower() in ARTIFACT_TYPES)


def _no_link(root: str, parts: tuple[str, ...]) -> os.stat_result | None:
    """The lstat of root/parts when no component below the root is a symbolic link (None when one is, or it is
    missing)."""
    path, st = root, None
    for part in parts:
        path = os.path.join(path, part)
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return None
    return st or os.lstat(root)


class ArtifactsHandler(SimpleHTTPRequestHandler):
    server_version = "specops-artifacts"
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **ARTIFACT_TYPES}

    def end_headers(self) -> None:
        # A run's report and plots are rewritten in place (a regression's trend.png each night): never stale.
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def _path_only(self) -> str:
        return self.path.split("?", 1)[0].split("#", 1)[0]

    def _served(self) -> bool:
        """Whether the requested path is an artifact (see the module's docstring)."""
        root = os.path.realpath(self.directory)
        parts = tuple(p for p in urllib.parse.unquote(self._path_only()).split("/") if p)
        if any(p in (".", "..") for p in parts):
            return False
        st = _no_link(root, parts)
        return st is not None and (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) and \
            artifact_kind(parts, stat.S_ISDIR(st.st_mode))

    def send_head(self):
        if self._path_only().rstrip("/") == ALERTS_PATH:
            return self._alerts_head()
        if not self._served():
            self.send_error(HTTPStatus.NOT_FOUND, "not a run artifact")
            return None
        path = self.translate_path(self.path)
        if os.path.isdir(path) and self._path_only().endswith("/"):
            return self.list_directory(path)  # never a directory's index.html, which may be no run's artifact
        return super().send_head()

    def list_directory(self, path):
        """The directory's artifacts only (http.server's own listing would show every entry)."""
        below = tuple(Path(path).relative_to(os.path.realpath(self.directory)).parts)
        try:
            names = sorted((n for n in os.listdir(path) if (st := _no_link(path, (n,))) is not None and
                            artifact_kind((*below, n), stat.S_ISDIR(st.st_mode))), key=str.lower)
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
        if not is_inbox(self._path_only()):
            self.send_error(HTTPStatus.NOT_FOUND, f"POST goes to {ALERTS_PATH}/<token> only; the rest is read-only")
            return
        inbox: Inbox = self.server.inbox  # type: ignore[attr-defined]
        try:
            inbox.check_sender(self.client_address[0], self._path_only())
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit():
                raise Refused(HTTPStatus.LENGTH_REQUIRED, "an alert needs a Content-Length")
            if int(length) > MAX_ALERT_BYTES:
                self.close_connection = True  # the body stays unread
                raise Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"an alert is at most {MAX_ALERT_BYTES} bytes")
            line = inbox.store(self.rfile.read(int(length)))
        except Refused as refused:
            self.close_connection = True  # a refused sender's body is never read
            self.send_error(refused.status, refused.why)
            return
        self.log_message("alert stored in %s: %s", inbox.path, line[:300])
        self.send_response(HTTPStatus.NO_CONTENT)
        self.end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's signature
        sys.stderr.write(f"{self.address_string()} {masked(format % args)}\n")
        sys.stderr.flush()


def make_server(root: Path, host: str = "127.0.0.1", port: int = 4201,
                token: str | None = None) -> ThreadingHTTPServer:
    """A server bound to host:port (port 0: any free one) serving `root`, not yet serving: serve_forever(). Its
    inbox takes alerts that carry `token` (None: none at all)."""
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    # daemon_threads (ThreadingHTTPServer's default): a slow client never holds the exit
    server = ThreadingHTTPServer((host, port), partial(ArtifactsHandler, directory=str(root)))
    server.inbox = Inbox(root, token or "")  # type: ignore[attr-defined]
    return server

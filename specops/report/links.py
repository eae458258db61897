"""Where a user's browser finds a file of a run: the one rule every artifact that links or embeds a file follows.

Under SPECOPS_ARTIFACTS and with SPECOPS_ARTIFACTS_URL set (`make up` serves the root with `specops
serve-artifacts` and hands the URL to the deployments), a file is an http(s) URL, which the Prefect UI
opens and, for an image in a markdown artifact, shows inline. Otherwise it is a file:// URI naming the
file on the host that wrote it: browsers refuse to open those from a web page, so the text beside it says
which host and path.
"""
from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import quote

from specops.run.roots import artifacts_root
from specops.settings import settings


def public_url(path: Path | str) -> str:
    """The http(s) URL of `path` under SPECOPS_ARTIFACTS_URL when it lies under the artifacts root (a
    directory's ends in /), else its file:// URI."""
    path = Path(path).resolve()
    base = settings().specops_artifacts_url
    if base is None:
        return path.as_uri()
    try:
        relative = path.relative_to(artifacts_root())
    except ValueError:  # outside the root the server serves: only this host can open it
        return path.as_uri()
    url = f"{base}/{quote(relative.as_posix())}" if relative.parts else base
    return url + "/" if path.is_dir() else url


def served(path: Path | str) -> bool:
    """Whether a browser can open `path` (public_url gives it an http(s) URL)."""
    return not public_url(path).startswith("file:")


def figure_markdown(path: Path | str, caption: str) -> str:
    """The figure as a markdown image (the Prefect UI shows it inline) when it is served; otherwise where it is."""
    if served(path):
        return f"![{caption}]({public_url(path)})"
    return f"{caption}: `{Path(path).resolve()}` on {socket.gethostname()} (set SPECOPS_ARTIFACTS_URL to see it here)"


def link_markdown(path: Path | str, text: str) -> str:
    """A markdown link a browser opens when the file is served; otherwise the path on its host."""
    if served(path):
        return f"[{text}]({public_url(path)})"
    return f"{text}: `{Path(path).resolve()}` on {socket.gethostname()}"

"""Upstream backend code a process launch serves with (Triton's vllm_backend): fetched at a pinned commit,
cached and verified like a model.

    github://<owner>/<repo>@<40-hex commit>   the repository's `src/` at that commit (GitHub's tar.gz archive)
    /abs/path or ./rel/path                    a checkout of the repository (its `src/` is taken)

The cache entry holds `src/` exactly as upstream has it (model.py, utils/...): specops never edits it.
Every use stats the entry's files against the manifest written at publish (specops.sources.integrity).
"""
from __future__ import annotations

import hashlib
import io
import re
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specops.http_client import download
from specops.sources.entry_lock import produce_once
from specops.sources.integrity import Entry, publish, rename_into_place, verify
from specops.sources.schemes import hash_dir

SCHEME = "github://"
GITHUB = re.compile(r"^github://(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)@(?P<commit>[0-9a-f]{40})$")
# GitHub's archive of a commit; a test serves its own tarball in the same layout.
ARCHIVE_URL = "https://codeload.github.com/{owner}/{repo}/tar.gz/{commit}"
SUBDIR = "src"  # what the repository serves from (vllm_backend: src/model.py, src/utils/)
REQUIRED = "model.py"
MANIFEST = "files.json"
MARKER = "COMPLETE"
DOWNLOAD_TIMEOUT_S = 120


class SourceUnreachable(RuntimeError):
    """A remote source that cannot be fetched: the message names the field, the URL and the local override."""


@dataclass(frozen=True)
class BackendCode:
    path: Path  # the directory holding model.py
    source: str
    sha256: str  # of the served files, as verified on this use


def check_source(text: str) -> str:
    """A source string as profiles give it; ValueError naming the accepted forms."""
    if text.startswith("github:") and not GITHUB.match(text):
        raise ValueError(f"malformed code source {text!r}: expected github://owner/repo@<full 40-hex commit> "
                         "(a pinned commit, not a branch)")
    if "://" in text and not text.startswith(SCHEME):
        raise ValueError(f"unknown code source {text!r}: github://owner/repo@<commit> or a local checkout")
    if not text.strip():
        raise ValueError("empty code source")
    return text


def fetch_backend_code(source: str, cache_dir: Path, log: Callable[[str], None] = print) -> BackendCode:
    """The verified cached `src/` of `source`, fetched (or copied) only on a miss."""
    check_source(source)
    match = GITHUB.match(source)
    if match:
        entry = Path(cache_dir) / "code" / f"github--{match['owner']}--{match['repo']}--{match['commit']}"
        fill: Callable[[Path], None] = lambda scratch: _download(match, scratch, log)  # noqa: E731
    else:
        checkout = Path(source).expanduser().resolve()
        src = checkout / SUBDIR
        if not (src / REQUIRED).is_file():
            raise FileNotFoundError(f"code source {source}: no {SUBDIR}/{REQUIRED} under {checkout} (expected a "
                                    "checkout of the repository)")
        entry = Path(cache_dir) / "code" / f"local--{hash_dir(src)[:16]}"
        fill = lambda scratch: shutil.copytree(src, scratch / SUBDIR, symlinks=False)  # noqa: E731
    produce_once(entry, lambda: (entry / MARKER).is_file(), lambda: _publish(entry, fill))
    digest = verify(_entry(entry, source))
    return BackendCode(entry / SUBDIR, source, digest)


def _entry(entry: Path, source: str) -> Entry:
    return Entry(root=entry, content=entry / SUBDIR, manifest=entry / MANIFEST,
                 rebuild=f"fetches {source} again")


def _publish(entry: Path, fill: Callable[[Path], None]) -> None:
    entry.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
    try:
        scratch.chmod(0o755)
        fill(scratch)
        if not (scratch / SUBDIR / REQUIRED).is_file():
            raise FileNotFoundError(f"the fetched code has no {SUBDIR}/{REQUIRED}")
        for path in (scratch / SUBDIR).rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)  # a read-only source (a reference copy) stays copyable
        digest = publish(_entry(scratch, ""))
        (scratch / MARKER).write_text(digest + "\n")
        rename_into_place(scratch, entry, lambda d: (d / MARKER).is_file())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _download(match: re.Match, scratch: Path, log: Callable[[str], None]) -> None:
    """GitHub's tar.gz of the commit; only `<repo>-<commit>/src/` is extracted, nothing outside it."""
    url = ARCHIVE_URL.format(**match.groupdict())
    log(f"downloading {url} ...")
    data = download(url, DOWNLOAD_TIMEOUT_S)
    log(f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}...")
    prefix = f"{match['repo']}-{match['commit']}/{SUBDIR}/"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and (m.isfile() or m.isdir())]
        if not members:
            raise FileNotFoundError(f"{url}: no {prefix} in the archive")
        for member in members:
            member.name = f"{SUBDIR}/{member.name[len(prefix):]}".rstrip("/")
        tar.extractall(scratch, members=members, filter="data")

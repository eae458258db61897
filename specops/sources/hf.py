"""Hugging Face Hub source: `hf://org/name[@revision]`, pinned to the commit it resolved to."""
from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from specops.settings import secret, settings
from specops.sources.entry_lock import exclusive, lock_path
from specops.sources.hub_files import HubFiles, selected
from specops.sources.integrity import Entry, quarantine, verify
from specops.sources.schemes import HF_SCHEME, ModelArtifact

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
HUB_CACHE = "hf"  # <cache>/hf: huggingface_hub's cache layout (models--org--name/...), shared with the containers
MANIFESTS = "specops-manifests"  # <cache>/hf/specops-manifests/<org--name>/<commit>.json
_MEMOS = "specops-sha256"  # the bare hash kept before manifests: still what a commit must hash to


def fetch_hf(
    repo_id: str,
    revision: str | None,
    cache_dir: Path,
    log: Callable[[str], None] = print,
    files: HubFiles | None = None,
) -> ModelArtifact:
    """Download (or reuse) a snapshot and return it with the commit it resolved to.

    With `files` (the backend's HubFiles) the revision is resolved to its commit first and only the
    files the backend reads are downloaded, at that commit; without, the whole snapshot.
    """
    # The token only ever travels as an argument: never logged, never put in the artifact.
    token = secret(settings().hf_token)
    log(f"fetching hf://{repo_id}@{revision or 'main'} ...")
    allow = None
    if files is not None:
        commit, listing = _listing(repo_id, revision, token, log)
        revision_to_get, allow = commit or revision, files.patterns(listing)
    else:
        revision_to_get = revision
    # One download of a snapshot at a time; a run that waited finds it recorded: a hit.
    name = f"{repo_id}@{revision_to_get or 'main'}{_subset(allow)}".replace("/", "--")
    with exclusive(lock_path(Path(cache_dir) / HUB_CACHE / MANIFESTS / name)):
        path = _download(repo_id, revision_to_get, cache_dir, token, allow)
        commit = _resolved_commit(path, repo_id, revision_to_get, token)
        cached = _manifest(Path(cache_dir), repo_id, commit, allow).is_file()
        sha256 = verified_hash(Path(cache_dir), repo_id, commit, path, allow)
    log(f"cached: {path} (commit {commit}{'; ' + ' '.join(allow) if allow else ''})")
    source = f"{HF_SCHEME}{repo_id}" + (f"@{revision}" if revision else "")
    return ModelArtifact(path=path, source=source, revision=commit, sha256=sha256, cached=cached)


def _subset(allow: tuple[str, ...] | None) -> str:
    return f".{hashlib.sha256(json.dumps(list(allow)).encode()).hexdigest()[:12]}" if allow else ""


def _manifest(cache_dir: Path, repo_id: str, commit: str, allow: tuple[str, ...] | None) -> Path:
    return cache_dir / HUB_CACHE / MANIFESTS / repo_id.replace("/", "--") / f"{commit}{_subset(allow)}.json"


def _download(repo_id: str, revision: str | None, cache_dir: Path, token: str | None,
              allow: tuple[str, ...] | None) -> Path:
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id=repo_id, revision=revision, cache_dir=Path(cache_dir) / HUB_CACHE,
                                  token=token, allow_patterns=list(allow) if allow else None))


def _listing(repo_id: str, revision: str | None, token: str | None,
             log: Callable[[str], None]) -> tuple[str | None, list[str] | None]:
    """(commit, repository files) from the hub; (None, None) offline, where the cached snapshot serves."""
    import httpx
    from huggingface_hub import HfApi
    from huggingface_hub.errors import OfflineModeIsEnabled

    try:
        info = HfApi().model_info(repo_id, revision=revision, token=token)
    # What snapshot_download itself falls back to the cache on (huggingface_hub/_snapshot_download.py).
    except (httpx.ConnectError, httpx.TimeoutException, OfflineModeIsEnabled) as exc:
        log(f"hub unreachable ({type(exc).__name__}); taking what the cache holds for every weight format")
        return None, None
    return info.sha, [s.rfilename for s in (info.siblings or [])]


def _resolved_commit(path: Path, repo_id: str, revision: str | None, token: str | None) -> str:
    # The hub cache names each snapshot directory after its commit; ask the API only when a
    # custom layout hides it.
    if _COMMIT.match(path.name):
        return path.name
    from huggingface_hub import HfApi

    return HfApi().model_info(repo_id, revision=revision, token=token).sha


def verified_hash(cache_dir: Path, repo_id: str, commit: str, path: Path,
                  allow: tuple[str, ...] | None = None) -> str:
    """hash_dir of the snapshot (of the files `allow` took), checked against its manifest on every use.

    A commit's bytes never change, so the manifest (and a memo kept before manifests) stays
    when a damaged snapshot is moved aside: the re-download must hash to the same. A snapshot
    directory is shared by every download of its commit: one taken with allow_patterns has a
    manifest of its own and is checked on its own files only.
    """
    memo = cache_dir / HUB_CACHE / _MEMOS / repo_id.replace("/", "--") / commit
    keep = (lambda rel: selected(allow, rel)) if allow else None
    entry = Entry(root=path, content=path, manifest=_manifest(cache_dir, repo_id, commit, allow),
                  rebuild=f"downloads what hf://{repo_id}@{commit} lacks again from the hub",
                  keep=keep)
    expected = memo.read_text().strip() if memo.is_file() and not allow else None
    return verify(entry, expected=expected, move_aside=_quarantine_snapshot)


def _quarantine_snapshot(entry: Entry, damaged: list[str] | None) -> Path:
    """Move the snapshot aside, and the blobs of its damaged files with it.

    The hub client links a new snapshot to blobs it already holds, so a damaged blob left in
    blobs/ would be served again; in the quarantined copy it takes its link's place.
    """
    moved = quarantine(entry, damaged)
    rels = damaged if damaged is not None else [str(p.relative_to(moved)) for p in moved.rglob("*")
                                                if p.is_symlink()]
    for rel in rels:
        link = moved / rel
        if link.is_symlink():
            blob = link.resolve()
            if blob.is_file():
                os.replace(blob, link)
    return moved

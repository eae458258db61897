"""Hugging Face Hub source: `hf://org/name[@revision]`, pinned to the commit it resolved to."""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from specops.sources.base import ModelArtifact
from specops.sources.integrity import Entry, quarantine, verify

SCHEME = "hf://"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_NAME_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MANIFESTS = "specops-manifests"  # <cache>/hf/specops-manifests/<org--name>/<commit>.json
_MEMOS = "specops-sha256"  # the bare hash kept before manifests: still what a commit must hash to


def parse_hf_uri(uri: str) -> tuple[str, str | None]:
    """Split `hf://org/name@rev` into (repo_id, revision); revision is None when absent."""
    if not uri.startswith(SCHEME):
        raise ValueError(f"not a Hugging Face URI (expected {SCHEME}org/name[@rev]): {uri!r}")
    body = uri[len(SCHEME):]
    repo_id, sep, revision = body.partition("@")
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(_NAME_PART.match(p) for p in parts):
        raise ValueError(f"bad repo id in {uri!r}: expected org/name")
    if sep and not revision:
        raise ValueError(f"empty revision after '@' in {uri!r}")
    return repo_id, (revision or None)


def fetch_hf(
    repo_id: str,
    revision: str | None,
    cache_dir: Path,
    log: Callable[[str], None] = print,
) -> ModelArtifact:
    """Download (or reuse) a snapshot and return it with the commit it resolved to."""
    from huggingface_hub import snapshot_download

    # The token only ever travels as an argument: never logged, never put in the artifact.
    token = os.environ.get("HF_TOKEN") or None
    hub_cache = Path(cache_dir) / "hf"
    log(f"fetching hf://{repo_id}@{revision or 'main'} ...")
    path = Path(snapshot_download(
        repo_id=repo_id, revision=revision, cache_dir=hub_cache, token=token,
    ))
    commit = _resolved_commit(path, repo_id, revision, token)
    log(f"cached: {path} (commit {commit})")
    source = f"{SCHEME}{repo_id}" + (f"@{revision}" if revision else "")
    return ModelArtifact(path=path, source=source, sha256=verified_hash(Path(cache_dir), repo_id, commit, path),
                         revision=commit)


def verify_hf(artifact: ModelArtifact, cache_dir: Path, log: Callable[[str], None] = print) -> ModelArtifact:
    """A cached step's snapshot, checked without the network; downloaded again if it is gone."""
    repo_id, revision = parse_hf_uri(artifact.source)
    if not artifact.path.is_dir():
        log(f"{artifact.path} is gone from the cache; fetching {artifact.source} again")
        return fetch_hf(repo_id, revision, cache_dir, log=log)
    sha256 = verified_hash(Path(cache_dir), repo_id, artifact.revision, artifact.path)
    return ModelArtifact(path=artifact.path, source=artifact.source, sha256=sha256, revision=artifact.revision)


def _resolved_commit(path: Path, repo_id: str, revision: str | None, token: str | None) -> str:
    # The hub cache names each snapshot directory after its commit; ask the API only when a
    # custom layout hides it.
    if _COMMIT.match(path.name):
        return path.name
    from huggingface_hub import HfApi

    return HfApi().model_info(repo_id, revision=revision, token=token).sha


def verified_hash(cache_dir: Path, repo_id: str, commit: str, path: Path) -> str:
    """hash_dir of the snapshot, checked against its manifest on every use.

    A commit's bytes never change, so the manifest (and a memo kept before manifests) stays
    when a damaged snapshot is moved aside: the re-download must hash to the same.
    """
    hub_cache = cache_dir / "hf"
    name = repo_id.replace("/", "--")
    memo = hub_cache / _MEMOS / name / commit
    entry = Entry(root=path, content=path, manifest=hub_cache / MANIFESTS / name / f"{commit}.json",
                  cache_dir=cache_dir, rebuild=f"downloads what hf://{repo_id}@{commit} lacks again from the hub")
    return verify(entry, expected=memo.read_text().strip() if memo.is_file() else None,
                  move_aside=_quarantine_snapshot)


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

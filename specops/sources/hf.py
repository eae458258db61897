"""Hugging Face Hub source: `hf://org/name[@revision]`, pinned to the commit it resolved to."""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from specops.sources.base import ModelArtifact, hash_dir

SCHEME = "hf://"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_NAME_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


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
    return ModelArtifact(
        path=path, source=source, sha256=_content_hash(hub_cache, repo_id, commit, path),
        revision=commit,
    )


def _resolved_commit(path: Path, repo_id: str, revision: str | None, token: str | None) -> str:
    # The hub cache names each snapshot directory after its commit; ask the API only when a
    # custom layout hides it.
    if _COMMIT.match(path.name):
        return path.name
    from huggingface_hub import HfApi

    return HfApi().model_info(repo_id, revision=revision, token=token).sha


def _content_hash(hub_cache: Path, repo_id: str, commit: str, path: Path) -> str:
    """hash_dir of the snapshot, remembered per commit: multi-GB checkpoints hash slowly."""
    memo = hub_cache / "specops-sha256" / repo_id.replace("/", "--") / commit
    if memo.is_file():
        return memo.read_text().strip()
    digest = hash_dir(path)
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(digest + "\n")
    return digest

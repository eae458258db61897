"""Content hashes and local checkpoint directories."""
from __future__ import annotations

import pytest

from specops.registry import UnknownName
from specops.sources.base import ModelArtifact, hash_dir
from specops.sources.local import fetch_local
from specops.sources.schemes import verify


def _checkpoint(path):
    path.mkdir(parents=True)
    (path / "config.json").write_text('{"model_type": "llama"}')
    (path / "model.safetensors").write_bytes(b"\x00" * 1000)
    return path


def test_hash_is_stable_and_content_sensitive(tmp_path):
    a = _checkpoint(tmp_path / "a")
    b = _checkpoint(tmp_path / "b")
    assert hash_dir(a) == hash_dir(a) == hash_dir(b)  # same content, other place
    (b / ".cache").mkdir()
    (b / ".cache" / "lock").write_text("x")
    assert hash_dir(b) == hash_dir(a)  # download bookkeeping is not content
    (b / "model.safetensors").write_bytes(b"\x01" * 1000)
    assert hash_dir(b) != hash_dir(a)
    (a / "model.safetensors").rename(a / "renamed.safetensors")
    assert hash_dir(a) != hash_dir(_checkpoint(tmp_path / "c"))  # names count too


def test_local_checkpoint(tmp_path):
    path = _checkpoint(tmp_path / "ckpt")
    art = fetch_local(path)
    assert art.path == path.resolve()
    assert art.sha256 == hash_dir(path)
    assert art.source == f"local:{path.resolve()}"
    assert art.revision is None


def test_local_path_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        fetch_local(tmp_path / "nope")


def test_local_path_is_a_file(tmp_path):
    (tmp_path / "model.bin").write_text("x")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        fetch_local(tmp_path / "model.bin")


def test_local_path_without_config(tmp_path):
    (tmp_path / "weights.safetensors").write_text("x")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        fetch_local(tmp_path)


def test_verifying_a_cached_local_artifact_hashes_what_is_there_now(tmp_path):
    """Not a cache: a checkpoint edited between runs is served with its new hash, not refused."""
    path = _checkpoint(tmp_path / "ckpt")
    cached = fetch_local(path)  # what a cached download step hands back
    (path / "model.safetensors").write_bytes(b"\x02" * 1000)
    now = verify(cached, tmp_path / "cache", log=lambda line: None)
    assert now.path == cached.path and now.sha256 == hash_dir(path) != cached.sha256


def test_only_fetched_sources_are_verified_here(tmp_path):
    trained = ModelArtifact(tmp_path, "trained:eagle3", "a" * 64)  # specops/draft/store.py verifies those
    with pytest.raises(UnknownName, match="unknown model source scheme 'trained'"):
        verify(trained, tmp_path, log=lambda line: None)

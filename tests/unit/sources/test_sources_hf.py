"""Hugging Face source: URI parsing, and fetching against a faked hub (it is unreachable
here, and real targets are often gated)."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import huggingface_hub
import pytest

from specops.sources import hf, integrity
from specops.sources.base import hash_dir
from specops.sources.hf import fetch_hf, parse_hf_uri, verify_hf
from specops.sources.integrity import CacheCorruptError

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize("uri, expected", [
    ("hf://meta-llama/Llama-3.1-8B-Instruct", ("meta-llama/Llama-3.1-8B-Instruct", None)),
    ("hf://yuhuili/EAGLE3-LLaMA3.1-Instruct-8B@main", ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "main")),
    (f"hf://org/name@{COMMIT}", ("org/name", COMMIT)),
    ("hf://org/name@refs/pr/3", ("org/name", "refs/pr/3")),
])
def test_parse_hf_uri(uri, expected):
    assert parse_hf_uri(uri) == expected


@pytest.mark.parametrize("uri", [
    "org/name", "hf:/org/name", "hf://name-only", "hf://org/name/extra", "hf://org/", "hf:///name",
    "hf://org/name@", "hf://org/na me", "https://huggingface.co/org/name",
])
def test_parse_hf_uri_rejects(uri):
    with pytest.raises(ValueError):
        parse_hf_uri(uri)


class FakeHub:
    """gated/unreachable hub, faked: writes a snapshot where the real client would."""

    def __init__(self, snapshot_name: str = COMMIT):
        self.calls: list[dict] = []
        self.snapshot_name = snapshot_name

    def snapshot_download(self, **kwargs):
        self.calls.append(kwargs)
        snap = Path(kwargs["cache_dir"]) / "models--org--name" / "snapshots" / self.snapshot_name
        snap.mkdir(parents=True, exist_ok=True)
        if not (snap / "config.json").exists():  # the real client leaves what it already holds alone
            (snap / "config.json").write_text('{"model_type": "llama"}')
        return str(snap)


@pytest.fixture
def fake_hub(monkeypatch):
    hub = FakeHub()
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub.snapshot_download)
    return hub


def test_fetch_hf_passes_the_token_and_never_logs_it(tmp_path, fake_hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    lines: list[str] = []
    art = fetch_hf("org/name", "main", tmp_path, log=lines.append)
    call = fake_hub.calls[0]
    assert call["token"] == "hf_secret_value"
    assert (call["repo_id"], call["revision"]) == ("org/name", "main")
    assert not any("hf_secret_value" in line for line in lines)
    assert "hf_secret_value" not in repr(art)
    assert art.revision == COMMIT
    assert art.source == "hf://org/name@main"
    assert art.sha256 == hash_dir(art.path)


def test_fetch_hf_without_token_sends_none(tmp_path, fake_hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    art = fetch_hf("org/name", None, tmp_path, log=lambda line: None)
    assert fake_hub.calls[0]["token"] is None
    assert art.source == "hf://org/name"


def test_fetch_hf_verifies_an_unchanged_snapshot_without_rehashing(tmp_path, fake_hub, monkeypatch):
    first = fetch_hf("org/name", None, tmp_path, log=lambda line: None)
    assert (tmp_path / "hf" / hf.MANIFESTS / "org--name" / f"{COMMIT}.json").is_file()
    monkeypatch.setattr(integrity, "hash_file", lambda path: pytest.fail("rehashed an unchanged commit"))
    assert fetch_hf("org/name", None, tmp_path, log=lambda line: None).sha256 == first.sha256


def test_a_memo_from_before_manifests_is_what_the_snapshot_must_hash_to(tmp_path, fake_hub):
    memo = tmp_path / "hf" / "specops-sha256" / "org--name" / COMMIT
    memo.parent.mkdir(parents=True)
    memo.write_text("e" * 64 + "\n")  # a memo of a hash, not of these bytes
    with pytest.raises(CacheCorruptError, match="differs from the eeeeeeeeeeee it was published with"):
        fetch_hf("org/name", None, tmp_path, log=lambda line: None)


class LinkingHub(FakeHub):
    """Lays a snapshot out as the real client does: links into blobs/, named by content."""

    def snapshot_download(self, **kwargs):
        self.calls.append(kwargs)
        repo = Path(kwargs["cache_dir"]) / "models--org--name"
        snap = repo / "snapshots" / self.snapshot_name
        snap.mkdir(parents=True, exist_ok=True)
        for name, data in {"config.json": b'{"model_type": "llama"}', "model.safetensors": b"\x07" * 4096}.items():
            blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
            if not blob.exists():  # the client reuses a blob it holds, whatever it now contains
                blob.parent.mkdir(parents=True, exist_ok=True)
                blob.write_bytes(data)
            if not (snap / name).exists():
                (snap / name).symlink_to(Path("..") / ".." / "blobs" / blob.name)
        return str(snap)


def test_a_damaged_blob_is_moved_aside_with_its_snapshot_and_downloaded_again(tmp_path, monkeypatch):
    hub = LinkingHub()
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub.snapshot_download)
    art = fetch_hf("org/name", None, tmp_path, log=lambda line: None)
    blob = (art.path / "model.safetensors").resolve()
    with blob.open("r+b") as fh:
        fh.write(b"\x00\x00")
    with pytest.raises(CacheCorruptError) as caught:
        verify_hf(art, tmp_path, log=lambda line: None)  # a cached download step's artifact
    moved = caught.value.moved_to
    assert moved.parent == art.path.parent and moved.name.startswith(f"{COMMIT}.corrupt-")
    assert "model.safetensors: content changed (same size" in str(caught.value)
    assert not blob.exists()  # or the next download would link the same bytes again
    assert (moved / "model.safetensors").read_bytes()[:2] == b"\x00\x00"  # the evidence, in the link's place
    assert (moved / "config.json").is_symlink() and (moved / "config.json").is_file()
    again = fetch_hf("org/name", None, tmp_path, log=lambda line: None)
    assert again.sha256 == art.sha256 == hash_dir(again.path)


def test_a_snapshot_gone_from_the_cache_is_downloaded_again(tmp_path, fake_hub):
    art = fetch_hf("org/name", "main", tmp_path, log=lambda line: None)
    shutil.rmtree(art.path)
    again = verify_hf(art, tmp_path, log=lambda line: None)
    assert len(fake_hub.calls) == 2 and again == art


def test_fetch_hf_asks_the_api_when_the_path_hides_the_commit(tmp_path, monkeypatch):
    hub = FakeHub(snapshot_name="custom")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub.snapshot_download)

    class FakeApi:  # gated/unreachable hub, faked
        def model_info(self, repo_id, revision=None, token=None):
            return type("Info", (), {"sha": COMMIT})()

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    assert fetch_hf("org/name", "v1", tmp_path, log=lambda line: None).revision == COMMIT

"""Hugging Face source: URI parsing, and fetching against a faked hub (it is unreachable
here, and real targets are often gated)."""
from __future__ import annotations

from pathlib import Path

import huggingface_hub
import pytest

from specops.sources import hf
from specops.sources.base import hash_dir
from specops.sources.hf import fetch_hf, parse_hf_uri

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


def test_fetch_hf_remembers_the_hash_per_commit(tmp_path, fake_hub, monkeypatch):
    first = fetch_hf("org/name", None, tmp_path, log=lambda line: None)
    monkeypatch.setattr(hf, "hash_dir", lambda path: pytest.fail("rehashed an unchanged commit"))
    assert fetch_hf("org/name", None, tmp_path, log=lambda line: None).sha256 == first.sha256


def test_fetch_hf_asks_the_api_when_the_path_hides_the_commit(tmp_path, monkeypatch):
    hub = FakeHub(snapshot_name="custom")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub.snapshot_download)

    class FakeApi:  # gated/unreachable hub, faked
        def model_info(self, repo_id, revision=None, token=None):
            return type("Info", (), {"sha": COMMIT})()

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    assert fetch_hf("org/name", "v1", tmp_path, log=lambda line: None).revision == COMMIT

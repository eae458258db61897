"""Hugging Face source: URI parsing, and fetching against a faked hub (it is unreachable
here, and real targets are often gated)."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import huggingface_hub
import pytest

from specops.sources import hf, integrity
from specops.sources.hf import fetch_hf
from specops.sources.integrity import CacheCorruptError
from specops.sources.schemes import hash_dir, parse_hf_uri

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
    with pytest.raises(CacheCorruptError) as caught:  # the next run's fetch, on the same cache
        fetch_hf("org/name", None, tmp_path, log=lambda line: None)
    moved = caught.value.moved_to
    assert moved.parent == art.path.parent and moved.name.startswith(f"{COMMIT}.corrupt-")
    assert "model.safetensors: content changed (same size" in str(caught.value)
    assert not blob.exists()  # or the next download would link the same bytes again
    assert (moved / "model.safetensors").read_bytes()[:2] == b"\x00\x00"  # the evidence, in the link's place
    assert (moved / "config.json").is_symlink() and (moved / "config.json").is_file()
    again = fetch_hf("org/name", None, tmp_path, log=lambda line: None)  # the run after it
    assert again.sha256 == art.sha256 == hash_dir(again.path)
    assert len(hub.calls) == 3


def test_a_snapshot_gone_from_the_cache_is_downloaded_again(tmp_path, fake_hub):
    art = fetch_hf("org/name", "main", tmp_path, log=lambda line: None)
    shutil.rmtree(art.path)
    again = fetch_hf("org/name", "main", tmp_path, log=lambda line: None)
    assert len(fake_hub.calls) == 2 and again == art and hash_dir(again.path) == art.sha256


def test_fetch_hf_asks_the_api_when_the_path_hides_the_commit(tmp_path, monkeypatch):
    hub = FakeHub(snapshot_name="custom")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub.snapshot_download)

    class FakeApi:  # gated/unreachable hub, faked
        def model_info(self, repo_id, revision=None, token=None):
            return type("Info", (), {"sha": COMMIT})()

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    assert fetch_hf("org/name", "v1", tmp_path, log=lambda line: None).revision == COMMIT


class FakeHubRepo:
    """A hub repository, faked (the hub is unreachable here): model_info lists its files, and
    snapshot_download writes those its allow_patterns select (matched by huggingface_hub's own
    filter_repo_objects, as the real client does) into the snapshot of the revision asked for."""

    FILES = {"config.json": b'{"model_type": "llama"}', "tokenizer.json": b"{}", "generation_config.json": b"{}",
             "model.safetensors": b"\x07" * 64, "pytorch_model.bin": b"\x08" * 64,
             "original/consolidated.00.pth": b"\x09" * 64, "README.md": b"# card"}

    def __init__(self, files=None, offline=False):
        self.files = dict(files or self.FILES)
        self.offline = offline
        self.calls: list[dict] = []
        self.info_calls: list[dict] = []

    def model_info(self, repo_id, revision=None, token=None):
        self.info_calls.append({"repo_id": repo_id, "revision": revision, "token": token})
        if self.offline:
            from huggingface_hub.errors import OfflineModeIsEnabled

            raise OfflineModeIsEnabled("HF_HUB_OFFLINE is set")
        siblings = [type("Sibling", (), {"rfilename": name})() for name in self.files]
        return type("Info", (), {"sha": COMMIT, "siblings": siblings})()

    def snapshot_download(self, **kwargs):
        from huggingface_hub.utils import filter_repo_objects

        self.calls.append(kwargs)
        snap = Path(kwargs["cache_dir"]) / "models--org--name" / "snapshots" / COMMIT
        for name in filter_repo_objects(self.files, allow_patterns=kwargs.get("allow_patterns")):
            if not (snap / name).exists():  # the real client leaves a file it already holds alone
                (snap / name).parent.mkdir(parents=True, exist_ok=True)
                (snap / name).write_bytes(self.files[name])
        return str(snap)


@pytest.fixture
def hub_repo(monkeypatch):
    repo = FakeHubRepo()
    monkeypatch.setattr(huggingface_hub, "snapshot_download", repo.snapshot_download)
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: repo)
    return repo


def _snapshot_files(art) -> set[str]:
    return {str(p.relative_to(art.path)) for p in art.path.rglob("*") if p.is_file()}


def test_only_the_files_the_backend_reads_are_downloaded_at_the_resolved_commit(tmp_path, hub_repo):
    from specops.sources.hub_files import CHECKPOINT

    art = fetch_hf("org/name", "main", tmp_path, log=lambda line: None, files=CHECKPOINT)
    call = hub_repo.calls[0]
    assert call["revision"] == COMMIT  # keyed by the commit "main" resolved to, not by the moving ref
    assert call["allow_patterns"] == [*CHECKPOINT.always, "*.safetensors"]
    assert _snapshot_files(art) == {"config.json", "tokenizer.json", "generation_config.json", "model.safetensors"}
    assert art.revision == COMMIT and art.source == "hf://org/name@main"
    manifests = list((tmp_path / "hf" / hf.MANIFESTS / "org--name").iterdir())
    assert [m.name.split(".")[0] for m in manifests] == [COMMIT] and manifests[0].name != f"{COMMIT}.json"


@pytest.mark.parametrize("weights, taken", [
    ({"pytorch_model.bin": b"\x01"}, "*.bin"),  # an older checkpoint without safetensors
    ({"medusa_lm_head.pt": b"\x02"}, "*.pt"),  # Medusa heads
])
def test_the_first_weight_format_the_repository_has_is_taken(tmp_path, monkeypatch, weights, taken):
    from specops.sources.hub_files import CHECKPOINT

    repo = FakeHubRepo({"config.json": b"{}", **weights})
    monkeypatch.setattr(huggingface_hub, "snapshot_download", repo.snapshot_download)
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: repo)
    art = fetch_hf("org/name", None, tmp_path, log=lambda line: None, files=CHECKPOINT)
    assert repo.calls[0]["allow_patterns"][-1] == taken and _snapshot_files(art) == {"config.json", *weights}


def test_a_wider_download_of_the_same_commit_leaves_the_narrower_one_valid(tmp_path, hub_repo):
    """One snapshot directory per commit, shared by downloads with other patterns (another backend, a
    container resolving the hub id in the shared cache): each is checked on its own files only."""
    from specops.sources.hub_files import CHECKPOINT

    narrow = fetch_hf("org/name", None, tmp_path, log=lambda line: None, files=CHECKPOINT)
    whole = fetch_hf("org/name", None, tmp_path, log=lambda line: None)  # adds .bin, .pth, README
    assert whole.path == narrow.path and whole.sha256 != narrow.sha256
    again = fetch_hf("org/name", None, tmp_path, log=lambda line: None, files=CHECKPOINT)
    assert again == narrow and again.cached
    (narrow.path / "model.safetensors").write_bytes(b"\x00" * 64)  # its own file damaged: refused
    with pytest.raises(CacheCorruptError, match="model.safetensors: content changed"):
        fetch_hf("org/name", None, tmp_path, log=lambda line: None, files=CHECKPOINT)


def test_a_snapshot_gone_is_fetched_again_with_the_same_files_of_the_same_commit(tmp_path, hub_repo):
    from specops.sources.hub_files import CHECKPOINT

    art = fetch_hf("org/name", "main", tmp_path, log=lambda line: None, files=CHECKPOINT)
    shutil.rmtree(art.path)
    again = fetch_hf("org/name", "main", tmp_path, log=lambda line: None, files=CHECKPOINT)
    assert again == art and hub_repo.calls[1]["revision"] == COMMIT
    assert hub_repo.calls[1]["allow_patterns"] == hub_repo.calls[0]["allow_patterns"]
    assert _snapshot_files(again) == _snapshot_files(art) and hash_dir(again.path) == art.sha256
    # Nothing is kept between runs but the cache: each fetch asks the hub again which commit "main" names and
    # which files it has (a ref that moved is followed); the same answer gives the same commit and patterns.
    assert len(hub_repo.info_calls) == 2


def test_offline_every_weight_format_is_allowed_and_the_cache_answers(tmp_path, monkeypatch):
    from specops.sources.hub_files import CHECKPOINT

    repo = FakeHubRepo(offline=True)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", repo.snapshot_download)
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: repo)
    lines: list[str] = []
    art = fetch_hf("org/name", "main", tmp_path, log=lines.append, files=CHECKPOINT)
    assert repo.calls[0]["revision"] == "main"
    assert repo.calls[0]["allow_patterns"] == [*CHECKPOINT.always, *CHECKPOINT.weights]
    assert "README.md" not in _snapshot_files(art) and any("hub unreachable" in line for line in lines)


def test_every_backend_names_the_files_it_reads():
    from specops.backends import BACKENDS
    from specops.sources.hub_files import HubFiles

    for name in BACKENDS.names():
        assert isinstance(BACKENDS.get(name).hub_files, HubFiles), name


def test_offline_the_real_client_serves_the_cached_snapshot(tmp_path, monkeypatch):
    """huggingface_hub itself, no fake: HF_HUB_OFFLINE refuses model_info, and snapshot_download finds
    the snapshot a previous download left in <cache>/hf (refs/main -> the commit)."""
    import huggingface_hub.constants

    from specops.sources.hub_files import CHECKPOINT

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    repo = tmp_path / "hf" / "models--org--name"
    snap = repo / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    for name in ("config.json", "model.safetensors"):
        (snap / name).write_text(name)
    lines: list[str] = []
    art = fetch_hf("org/name", None, tmp_path, log=lines.append, files=CHECKPOINT)
    assert art.path == snap and art.revision == COMMIT and art.sha256 == hash_dir(snap)
    assert any("hub unreachable (OfflineModeIsEnabled)" in line for line in lines)

"""specops.sources.backend_code: Triton's vllm_backend code, fetched at a pinned commit (github://) or copied from a
local checkout, cached and verified like a model.

The local checkout is the read-only reference copy /work/shared/reference/vllm_backend (main 8de0c14, never
written to). The github:// source is fetched over real HTTP from a fake origin: an http.server on 127.0.0.1
serving a tar.gz built from that reference copy in GitHub's archive layout (`<repo>-<commit>/src/...`), with
ARCHIVE_URL pointed at it.
"""
from __future__ import annotations

import io
import os
import stat
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from specops.http_client import HttpError
from specops.sources import backend_code
from specops.sources.backend_code import SUBDIR, check_source, fetch_backend_code
from specops.sources.integrity import CacheCorruptError
from specops.sources.schemes import hash_dir
from tests.reference import REFERENCE

CHECKOUT = REFERENCE / "vllm_backend"
COMMIT = "8de0c148bda1da25de1e05ffaaf67116dacc7264"
SOURCE = f"github://triton-inference-server/vllm_backend@{COMMIT}"

pytestmark = pytest.mark.skipif(not (CHECKOUT / "src" / "model.py").is_file(),
                                reason=f"no vllm_backend reference copy at {CHECKOUT}")


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def stats_of(root: Path) -> dict[str, tuple]:
    return {p.relative_to(root).as_posix(): (s.st_mode, s.st_mtime_ns, s.st_size)
            for p in sorted(root.rglob("*")) for s in [p.stat()]}


@pytest.fixture(scope="module")
def reference_stats():
    before = stats_of(CHECKOUT)
    yield before
    assert stats_of(CHECKOUT) == before, "the reference checkout was changed"


# --- a local checkout -----------------------------------------------------------------------------------------

def test_a_local_checkout_is_copied_cached_and_verified(tmp_path, reference_stats):
    code = fetch_backend_code(str(CHECKOUT), tmp_path / "cache", log=lambda line: None)
    assert code.path.name == SUBDIR and code.path.is_relative_to(tmp_path / "cache" / "code")
    assert code.source == str(CHECKOUT)
    assert files_of(code.path) == files_of(CHECKOUT / "src")  # src/ exactly, nothing else of the checkout
    assert not any(p.is_symlink() for p in code.path.rglob("*"))
    assert code.sha256 == hash_dir(CHECKOUT / "src")
    entry = code.path.parent
    assert entry.name == f"local--{hash_dir(CHECKOUT / 'src')[:16]}"
    assert (entry / backend_code.MARKER).read_text().strip() == code.sha256
    # the read-only source gave writable copies (a later quarantine or cleanup can move them)
    assert all(p.stat().st_mode & stat.S_IWUSR for p in code.path.rglob("*"))


def test_a_second_fetch_is_a_cache_hit(tmp_path, monkeypatch, reference_stats):
    first = fetch_backend_code(str(CHECKOUT), tmp_path / "cache", log=lambda line: None)
    inode = (first.path / "model.py").stat().st_ino

    def no_copy(*args, **kwargs):
        raise AssertionError("copied again on a cache hit")

    monkeypatch.setattr(backend_code.shutil, "copytree", no_copy)
    second = fetch_backend_code(str(CHECKOUT), tmp_path / "cache", log=lambda line: None)
    assert (second.path, second.sha256) == (first.path, first.sha256)
    assert (second.path / "model.py").stat().st_ino == inode


@pytest.mark.parametrize("damage", ["append", "same-size rewrite", "remove", "add"])
def test_a_damaged_cache_entry_is_caught(tmp_path, damage, reference_stats):
    code = fetch_backend_code(str(CHECKOUT), tmp_path / "cache", log=lambda line: None)
    target = code.path / "utils" / "metrics.py"
    if damage == "append":
        target.write_bytes(target.read_bytes() + b"\n# edited\n")
    elif damage == "same-size rewrite":
        data = target.read_bytes()
        target.write_bytes(data[:-1] + (b"X" if data[-1:] != b"X" else b"Y"))
    elif damage == "remove":
        target.unlink()
    else:
        (code.path / "utils" / "extra.py").write_text("import os\n")
    with pytest.raises(CacheCorruptError) as err:
        fetch_backend_code(str(CHECKOUT), tmp_path / "cache", log=lambda line: None)
    assert str(code.path.parent) in str(err.value)
    assert err.value.moved_to is not None and err.value.moved_to.is_dir()  # kept as evidence
    assert not code.path.parent.exists()
    # the next fetch rebuilds the entry from the source
    again = fetch_backend_code(str(CHECKOUT), tmp_path / "cache", log=lambda line: None)
    assert files_of(again.path) == files_of(CHECKOUT / "src") and again.sha256 == code.sha256


def test_a_directory_that_is_not_a_checkout_is_refused(tmp_path):
    (tmp_path / "repo" / "src").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=r"no src/model\.py under"):
        fetch_backend_code(str(tmp_path / "repo"), tmp_path / "cache", log=lambda line: None)
    assert not (tmp_path / "cache" / "code").exists() or not any((tmp_path / "cache" / "code").iterdir())


# --- github:// over HTTP from a fake origin ----------------------------------------------------------------------

def github_archive(repo: str, commit: str, with_src: bool = True) -> bytes:
    """A tar.gz in the layout of GitHub's codeload archives: every path under `<repo>-<commit>/`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        top = f"{repo}-{commit}"
        info = tarfile.TarInfo(top)
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
        for path in sorted(CHECKOUT.rglob("*")):
            rel = path.relative_to(CHECKOUT).as_posix()
            if not with_src and rel.split("/")[0] == "src":
                continue
            tar.add(path, arcname=f"{top}/{rel}", recursive=False)
    return buf.getvalue()


class FakeOrigin:
    """Stands in for codeload.github.com: serves archives by path and records what was asked."""

    def __init__(self, archives: dict[str, bytes]):
        self.archives, self.requests = archives, []
        origin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                origin.requests.append(self.path)
                body = origin.archives.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_origin(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)  # loopback: never through a proxy
    archives: dict[str, bytes] = {}
    with FakeOrigin(archives) as origin:
        monkeypatch.setattr(backend_code, "ARCHIVE_URL",
                            f"http://127.0.0.1:{origin.port}/{{owner}}/{{repo}}/tar.gz/{{commit}}")
        yield origin


def test_a_github_source_is_downloaded_once_and_holds_src_only(tmp_path, fake_origin, reference_stats):
    path = f"/triton-inference-server/vllm_backend/tar.gz/{COMMIT}"
    fake_origin.archives[path] = github_archive("vllm_backend", COMMIT)
    lines: list[str] = []
    code = fetch_backend_code(SOURCE, tmp_path / "cache", log=lines.append)
    assert fake_origin.requests == [path]
    assert any(f"127.0.0.1:{fake_origin.port}" in line for line in lines)
    assert code.path.parent.name == f"github--triton-inference-server--vllm_backend--{COMMIT}"
    assert files_of(code.path) == files_of(CHECKOUT / "src")  # LICENSE and samples/ were left out
    assert code.sha256 == hash_dir(CHECKOUT / "src")
    again = fetch_backend_code(SOURCE, tmp_path / "cache", log=lines.append)
    assert fake_origin.requests == [path]  # a cache hit: nothing downloaded
    assert again.sha256 == code.sha256


def test_an_archive_without_src_is_refused_and_nothing_is_cached(tmp_path, fake_origin):
    fake_origin.archives[f"/triton-inference-server/vllm_backend/tar.gz/{COMMIT}"] = github_archive(
        "vllm_backend", COMMIT, with_src=False)
    with pytest.raises(FileNotFoundError, match=f"no vllm_backend-{COMMIT}/src/ in the archive"):
        fetch_backend_code(SOURCE, tmp_path / "cache", log=lambda line: None)
    entries = [p.name for p in (tmp_path / "cache" / "code").iterdir() if not p.name.endswith(".lock")]
    assert entries == []  # no entry, no scratch left behind


def test_a_commit_the_origin_does_not_have_fails_and_the_log_names_the_url(tmp_path, fake_origin):
    lines: list[str] = []
    with pytest.raises(HttpError, match="404"):
        fetch_backend_code(SOURCE, tmp_path / "cache", log=lines.append)
    path = f"/triton-inference-server/vllm_backend/tar.gz/{COMMIT}"
    assert fake_origin.requests == [path]
    assert lines == [f"downloading http://127.0.0.1:{fake_origin.port}{path} ..."]


# --- malformed sources ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("source", [
    "github://triton-inference-server/vllm_backend@main",  # a branch
    "github://triton-inference-server/vllm_backend@8de0c14",  # a short commit
    f"github://triton-inference-server/vllm_backend@{COMMIT.upper()}",
    f"github://triton-inference-server/vllm_backend#{COMMIT}",
    f"github:triton-inference-server/vllm_backend@{COMMIT}",
    f"github://vllm_backend@{COMMIT}",
])
def test_a_malformed_github_source_names_the_accepted_form(source, tmp_path):
    for call in (lambda: check_source(source), lambda: fetch_backend_code(source, tmp_path, log=print)):
        with pytest.raises(ValueError, match=r"expected github://owner/repo@<full 40-hex commit> \(a pinned commit"):
            call()
    assert not (tmp_path / "code").exists()


@pytest.mark.parametrize("source", [
    f"https://github.com/triton-inference-server/vllm_backend/archive/{COMMIT}.tar.gz",
    "s3://bucket/vllm_backend",
    "file:///work/shared/reference/vllm_backend",
])
def test_another_scheme_names_the_accepted_forms(source):
    with pytest.raises(ValueError, match=r"unknown code source .*github://owner/repo@<commit> or a local checkout"):
        check_source(source)


@pytest.mark.parametrize("source", ["", "   "])
def test_an_empty_source_is_refused(source):
    with pytest.raises(ValueError, match="empty code source"):
        check_source(source)


def test_well_formed_sources_pass_unchanged():
    assert check_source(SOURCE) == SOURCE
    assert check_source(str(CHECKOUT)) == str(CHECKOUT)
    assert check_source("./vllm_backend") == "./vllm_backend"


def test_a_profile_with_a_branch_is_refused_at_load_naming_the_field():
    from specops.profile.errors import ProfileError
    from specops.profile.loader import load_profile

    with pytest.raises(ProfileError) as err:
        load_profile("ngram-vllm-cpu", ["backend.backend_code=github://triton-inference-server/vllm_backend@main"])
    assert [field for field, _ in err.value.problems] == ["backend.backend_code"]
    assert "40-hex commit" in str(err.value)


def test_the_cache_lives_under_the_given_root_only(tmp_path, reference_stats):
    cache = tmp_path / "cache"
    fetch_backend_code(str(CHECKOUT), cache, log=lambda line: None)
    assert {p.name for p in cache.iterdir()} == {"code"}
    assert all(os.path.commonpath([p, cache]) == str(cache) for p in cache.rglob("*"))


def test_the_vllm_backend_fetches_its_code_at_the_download_step_and_an_unreachable_one_says_the_override(
        tmp_path, fake_origin, monkeypatch):
    """ngram-vllm-cpu (Triton's vllm_backend at a pinned commit, launch: process): the backend's remote sources
    are fetched where models are (Backend.fetch_sources, called by the download step), and GitHub out of reach
    fails there naming the field, the URL and the local checkout that replaces it (issue 40: it failed at serve
    with a raw URLError)."""
    from specops.backends.vllm.backend import SourceUnreachable
    from specops.pipeline.backend import backend_for
    from specops.profile.loader import load_profile

    profile = load_profile("ngram-vllm-cpu").profile
    source = profile.backend.backend_code
    commit = source.rsplit("@", 1)[1]
    fake_origin.archives[f"/triton-inference-server/vllm_backend/tar.gz/{commit}"] = github_archive("vllm_backend",
                                                                                                   commit)
    fetched = backend_for(profile).fetch_sources(tmp_path / "cache", log=lambda line: None)
    assert fetched == {"backend.backend_code": hash_dir(CHECKOUT / "src")}
    monkeypatch.setattr(backend_code, "ARCHIVE_URL", "http://127.0.0.1:9/{owner}/{repo}/tar.gz/{commit}")
    with pytest.raises(SourceUnreachable) as refused:
        backend_for(profile).fetch_sources(tmp_path / "elsewhere", log=lambda line: None)
    message = str(refused.value)
    assert message.startswith(f"backend.backend_code: cannot fetch {source} (http://127.0.0.1:9/")
    assert f"commit {commit}: --set backend.backend_code=" in message
    assert backend_for(load_profile("ngram-vllm").profile).fetch_sources(tmp_path / "c2", print) == {}  # the image's

"""The checks `specops run` makes before Prefect starts, on their own."""
from __future__ import annotations

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cli import preflight
from specops.host.processes import pick_free_ports
from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile

COMMIT = "a" * 40


def _snapshot(hub, repo_id="org/name", ref="main", commit=COMMIT):
    repo = hub / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / ref).write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")


def test_hub_snapshot_cached_by_ref_and_by_commit(tmp_path):
    _snapshot(tmp_path)
    assert preflight._hub_snapshot_cached(tmp_path, "org/name", None)
    assert preflight._hub_snapshot_cached(tmp_path, "org/name", COMMIT)
    assert not preflight._hub_snapshot_cached(tmp_path, "org/name", "v2")
    assert not preflight._hub_snapshot_cached(tmp_path, "org/other", None)


def test_cached_hf_source_needs_no_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # would be unreachable
    _snapshot(tmp_path / "hf")
    assert preflight.hub_problems(load_profile("ngram-local", ["target.source=hf://org/name"])) == []


def test_not_writable_names_what_is_in_the_way(tmp_path):
    (tmp_path / "file").write_text("x")
    assert preflight._not_writable(tmp_path / "new" / "dir") is None
    assert preflight._not_writable(tmp_path / "file") == f"{tmp_path / 'file'} is not a directory"
    assert preflight._not_writable(tmp_path / "file" / "sub") == f"{tmp_path / 'file'} is a file, not a directory"


def test_directory_problems_name_the_variable_set_or_the_default(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "file"))
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "file" / "artifacts"))
    monkeypatch.chdir(tmp_path)
    artifacts, cache = preflight.directory_problems()
    assert artifacts.startswith(f"SPECOPS_ARTIFACTS={tmp_path / 'file' / 'artifacts'}: ")
    assert cache.startswith(f"SPECOPS_CACHE={tmp_path / 'file'}: ")
    monkeypatch.delenv("SPECOPS_ARTIFACTS")
    (tmp_path / "artifacts").write_text("x")
    assert preflight.directory_problems()[0].startswith(
        f"{tmp_path / 'artifacts'} (the default: SPECOPS_ARTIFACTS is unset): ")


def test_not_writable_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    # Permission bits do not stop root (CI runs as root): sysfs refuses everyone.
    assert "is not writable" in preflight._not_writable(Path("/sys/kernel") if os.geteuid() == 0 else locked)


def test_a_root_short_of_the_minimum_free_space_is_one_problem_naming_it(tmp_path, monkeypatch):
    from tests.tmpfs import small_disk

    with small_disk(tmp_path / "small", 4096) as small:
        for short, roomy in (("SPECOPS_ARTIFACTS", "SPECOPS_CACHE"), ("SPECOPS_CACHE", "SPECOPS_ARTIFACTS")):
            monkeypatch.setenv(short, str(small / "root"))
            monkeypatch.setenv(roomy, str(tmp_path / "roomy"))
            monkeypatch.setenv("SPECOPS_MIN_FREE_MB", "100")
            assert preflight.directory_problems() == [
                f"{short}={small / 'root'}: 4 MB free, below the 100 MB a run needs (SPECOPS_MIN_FREE_MB); free "
                f"space there, or point {short} at a disk with room"]
            monkeypatch.setenv("SPECOPS_MIN_FREE_MB", "3")
            assert preflight.directory_problems() == []


def test_host_check_accepts_loopback_and_refuses_a_foreign_address():
    preflight.check_host(load_profile("ngram-local"))
    with pytest.raises(ProfileError, match="serving.host: '192.0.2.1' is not an address of this machine"):
        preflight.check_host(load_profile("ngram-local", ["serving.host=192.0.2.1"]))


def test_unreachable_treats_an_http_error_as_an_answer_and_names_why_nothing_answers():
    class Unavailable(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(503)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert preflight._unreachable(f"http://127.0.0.1:{server.server_port}/health") is None
    finally:
        server.shutdown()
        server.server_close()
    closed = pick_free_ports("127.0.0.1", 1)[0]
    assert "Connection refused" in preflight._unreachable(f"http://127.0.0.1:{closed}/health")
    assert "not a URL" in preflight._unreachable("http://[::1")

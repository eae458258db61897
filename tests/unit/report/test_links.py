"""specops/report/writer.py: a run's files as URLs a browser opens (SPECOPS_ARTIFACTS_URL) or, without it, file://."""
from __future__ import annotations

import socket

import pytest

from specops.report.writer import link_markdown, public_url
from specops.settings import SettingsError, settings


@pytest.fixture
def root(tmp_path, monkeypatch):
    root = tmp_path / "artifacts"
    (root / "ngram-local" / "run 1").mkdir(parents=True)
    (root / "ngram-local" / "run 1" / "comparison.png").write_bytes(b"png")
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(root))
    monkeypatch.delenv("SPECOPS_ARTIFACTS_URL", raising=False)
    return root


def test_a_file_under_the_served_root_is_its_http_url_quoted(root, monkeypatch):
    monkeypatch.setenv("SPECOPS_ARTIFACTS_URL", "http://bench-1:4201/")  # the trailing slash is dropped
    png = root / "ngram-local" / "run 1" / "comparison.png"
    assert public_url(png) == "http://bench-1:4201/ngram-local/run%201/comparison.png"
    assert public_url(png.parent) == "http://bench-1:4201/ngram-local/run%201/"  # a directory: its listing
    assert public_url(root) == "http://bench-1:4201/"
    assert link_markdown(png, "comparison.png", image=True) == \
        "![comparison.png](http://bench-1:4201/ngram-local/run%201/comparison.png)"
    assert link_markdown(png.parent, "run directory") == "[run directory](http://bench-1:4201/ngram-local/run%201/)"


def test_outside_the_root_or_without_a_server_it_stays_a_file_uri_and_says_where(root, tmp_path, monkeypatch):
    png = root / "ngram-local" / "run 1" / "comparison.png"
    assert public_url(png) == png.as_uri()
    assert link_markdown(png, "comparison.png", image=True) == (f"comparison.png: `{png}` on {socket.gethostname()} "
                                                      "(set SPECOPS_ARTIFACTS_URL to see it here)")
    monkeypatch.setenv("SPECOPS_ARTIFACTS_URL", "https://artifacts.example")
    outside = tmp_path / "elsewhere.png"
    assert public_url(outside) == outside.as_uri()
    assert public_url(root / ".." / "elsewhere.png") == outside.as_uri()  # `..` resolved before it is judged
    assert link_markdown(outside, "x") == f"x: `{outside}` on {socket.gethostname()}"


@pytest.mark.parametrize("value", ["bench-1:4201", "file:///srv/artifacts", "http://"])
def test_a_url_no_browser_opens_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("SPECOPS_ARTIFACTS_URL", value)
    with pytest.raises(SettingsError, match="SPECOPS_ARTIFACTS_URL=.*http\\(s\\) URL"):
        settings()


def test_an_empty_url_is_unset(monkeypatch):
    """What a deployment without an artifacts server stores (tools/deploy_source.py): file:// links."""
    monkeypatch.setenv("SPECOPS_ARTIFACTS_URL", "")
    assert settings().specops_artifacts_url is None

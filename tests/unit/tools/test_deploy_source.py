"""tools/deploy_source.py: the commit `prefect deploy` pins (HEAD of a clean checkout) and the repository."""
from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("deploy_source", ROOT / "tools" / "deploy_source.py")
deploy_source = importlib.util.module_from_spec(spec)
spec.loader.exec_module(deploy_source)

ENV = {"SPECOPS_WORKER_ARTIFACTS": "/srv/specops/artifacts"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("1\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "one")
    return tmp_path


def test_a_clean_checkout_pins_head(repo):
    assert deploy_source.commit(repo, ENV) == (git(repo, "rev-parse", "HEAD"), None)
    (repo / "untracked.txt").write_text("not deployed, not in the way\n")
    assert deploy_source.commit(repo, ENV)[1] is None


def test_uncommitted_changes_are_refused_naming_the_file_unless_allowed(repo):
    (repo / "a.txt").write_text("2\n")
    with pytest.raises(deploy_source.DeployError, match=r"uncommitted changes to a\.txt.*SPECOPS_DEPLOY_DIRTY=1"):
        deploy_source.commit(repo, ENV)
    head, warning = deploy_source.commit(repo, {**ENV, "SPECOPS_DEPLOY_DIRTY": "1"})
    assert head == git(repo, "rev-parse", "HEAD") and "WITHOUT the uncommitted changes to a.txt" in warning


def test_worker_artifacts_must_be_an_absolute_directory(repo):
    for env in ({}, {"SPECOPS_WORKER_ARTIFACTS": "artifacts"}):
        with pytest.raises(deploy_source.DeployError, match="SPECOPS_WORKER_ARTIFACTS.*absolute directory"):
            deploy_source.commit(repo, env)


def test_repository_is_the_setting_else_origin_else_the_checkout(repo):
    assert deploy_source.repository(repo, {}) == str(repo)
    git(repo, "remote", "add", "origin", "https://example.invalid/specops.git")
    assert deploy_source.repository(repo, {}) == "https://example.invalid/specops.git"
    assert deploy_source.repository(repo, {"SPECOPS_DEPLOY_REPOSITORY": "file:///srv/specops.git"}) == \
        "file:///srv/specops.git"


def test_outside_a_checkout_says_so(tmp_path):
    with pytest.raises(deploy_source.DeployError, match="is not a git checkout"):
        deploy_source.commit(tmp_path, ENV)

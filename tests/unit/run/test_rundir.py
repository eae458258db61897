"""Run ids name one new directory under the artifacts root: never outside it, never an old run's."""
from __future__ import annotations

import pytest

from specops.run.rundir import RunDir, RunDirError, validate_run_id


@pytest.fixture(autouse=True)
def artifacts(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))
    return tmp_path / "artifacts"


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "/abs", "..", "a..b", ".hidden", "-dash", "", "x" * 129,
                                    "sp ace", "new\nline", "trailing\n"])
def test_malformed_run_ids_are_refused(run_id):
    with pytest.raises(RunDirError, match="--run-id"):
        validate_run_id(run_id, "ngram-local")


@pytest.mark.parametrize("run_id", ["first", "20260101-120000-ab12", "v1.2_rc-3", "x" * 128])
def test_well_formed_run_ids_pass(run_id):
    assert validate_run_id(run_id, "ngram-local") == run_id


def test_create_refuses_an_existing_run_directory(artifacts):
    run = RunDir.create("ngram-local", "first")
    (run.path / "report.md").write_text("a finished run")
    with pytest.raises(RunDirError, match=f"{run.path} already exists: choose another --run-id"):
        RunDir.create("ngram-local", "first")
    assert (run.path / "report.md").read_text() == "a finished run"


def test_create_refuses_a_path_as_run_id(artifacts):
    with pytest.raises(RunDirError):
        RunDir.create("ngram-local", "../../outside")
    assert not (artifacts.parent / "outside").exists()


def test_generated_run_ids_are_fresh_directories(artifacts):
    a, b = RunDir.create("ngram-local"), RunDir.create("ngram-local", None)
    assert a.path != b.path and a.path.parent == artifacts / "ngram-local"


def test_cache_root_is_specops_cache_else_under_xdg_cache_home_else_home(tmp_path, monkeypatch):
    from specops.settings import cache_root

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("SPECOPS_CACHE", raising=False)
    assert cache_root() == tmp_path / "home" / ".cache" / "specops"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "specops"
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"


def test_steps_that_overlap_count_their_wall_time_once():
    from specops.run.rundir import RunProgress

    progress = RunProgress(spans={"serve": [(0.0, 10.0), (2.0, 12.0)], "check": [(12.0, 15.0)],
                                  "benchmark": [(20.0, 30.0)]})
    assert progress.busy_s(["serve", "check", "benchmark"]) == 25.0  # two starts side by side: 12 s, not 20 s
    assert progress.busy_s(["serve"]) == 12.0 and progress.busy_s([]) == 0.0

"""Rendered repositories and built engines: published with a manifest, verified where used."""
from __future__ import annotations

from pathlib import Path

import pytest

from specops.methods.specs import NgramMethod
from specops.pipeline import render
from specops.sources.base import ModelArtifact
from specops.sources.integrity import CacheCorruptError
from specops.variant import Variant

TARGET = ModelArtifact(Path("/models/target"), "embedded:smollm2-135m", "a" * 64)
VARIANT = Variant("speculative", NgramMethod())


class FakeBackend:
    """Renders a tiny repository and builds a tiny engine, as a real backend lays them out."""

    def __init__(self):
        self.builds = 0

    def cache_identity(self):
        return {"backend": "fake"}

    def render(self, variant, target, draft, out_dir):
        (out_dir / variant.name / "1").mkdir(parents=True)
        (out_dir / variant.name / "config.pbtxt").write_text(f'name: "{variant.name}"')
        (out_dir / variant.name / "1" / "model.py").write_text("MODEL = 1\n")

    def use_engines(self, variant, engines):
        pass

    def build(self, variant, target, draft, out_dir):
        self.builds += 1
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "rank0.engine").write_bytes(b"\x05" * 512)
        return out_dir


def test_a_rendered_repository_is_staged_when_untouched(tmp_path):
    repo = render.render_repository(FakeBackend(), VARIANT, TARGET, None, tmp_path)
    staged = render.stage_repository(repo, tmp_path / "run" / "repository")
    assert (staged / "speculative" / "1" / "model.py").read_text() == "MODEL = 1\n"
    assert not (staged / render.COMPLETE).exists()


def test_an_edited_repository_is_refused_and_rendered_again_next_time(tmp_path):
    backend = FakeBackend()
    repo = render.render_repository(backend, VARIANT, TARGET, None, tmp_path)
    (repo / "speculative" / "1" / "model.py").write_text("MODEL = 20\n")
    with pytest.raises(CacheCorruptError) as caught:
        render.stage_repository(repo, tmp_path / "run" / "repository")
    message = str(caught.value)
    assert f"cache entry {repo} is corrupt: speculative/1/model.py: size changed (10 -> 11 bytes)" in message
    assert "the next run renders the repository again" in message
    assert not (tmp_path / "run" / "repository").exists()
    again = render.render_repository(backend, VARIANT, TARGET, None, tmp_path)
    assert again == repo and (again / "speculative" / "1" / "model.py").read_text() == "MODEL = 1\n"


def test_a_repository_rendered_before_manifests_is_recorded_on_first_use(tmp_path):
    repo = render.render_repository(FakeBackend(), VARIANT, TARGET, None, tmp_path)
    (repo / render.COMPLETE).write_text("")  # the empty marker older versions wrote
    render.stage_repository(repo, tmp_path / "run" / "repository")
    assert '"files"' in (repo / render.COMPLETE).read_text()


def test_a_hand_made_repository_is_staged_as_it_is(tmp_path):
    repo = tmp_path / "mine"
    (repo / "base").mkdir(parents=True)
    (repo / "base" / "config.pbtxt").write_text('name: "base"')
    render.stage_repository(repo, tmp_path / "staged")
    assert not (repo / render.COMPLETE).exists() and (tmp_path / "staged" / "base" / "config.pbtxt").is_file()


def test_built_engines_are_verified_on_a_cache_hit(tmp_path):
    backend = FakeBackend()
    engines = render.build_engines(backend, VARIANT, TARGET, None, tmp_path)
    assert render.build_engines(backend, VARIANT, TARGET, None, tmp_path) == engines and backend.builds == 1
    (engines / "rank0.engine").write_bytes(b"\x05" * 100)
    with pytest.raises(CacheCorruptError, match=r"rank0.engine: size changed \(512 -> 100 bytes\).*builds the engines"):
        render.build_engines(backend, VARIANT, TARGET, None, tmp_path)
    assert render.build_engines(backend, VARIANT, TARGET, None, tmp_path) == engines and backend.builds == 2


class CrashingBackend(FakeBackend):
    def build(self, variant, target, draft, out_dir):
        (out_dir / "rank0.engine").write_bytes(b"\x05" * 10)  # half an engine, then the build dies
        raise RuntimeError("trtllm-build killed")


def test_a_build_that_dies_leaves_no_entry_behind(tmp_path):
    with pytest.raises(RuntimeError, match="killed"):
        render.build_engines(CrashingBackend(), VARIANT, TARGET, None, tmp_path)
    assert list((tmp_path / "engines").iterdir()) == []  # neither a half entry nor its scratch directory
    assert render.build_engines(FakeBackend(), VARIANT, TARGET, None, tmp_path).is_dir()


class RacingBackend(FakeBackend):
    """Another run publishes the same entry while this one builds (what a concurrent run does)."""

    def build(self, variant, target, draft, out_dir):
        other = FakeBackend()
        self.theirs = render.build_engines(other, variant, target, draft, out_dir.parent.parent)
        return super().build(variant, target, draft, out_dir)


def test_a_concurrent_build_that_published_first_is_kept_and_used(tmp_path):
    backend = RacingBackend()
    engines = render.build_engines(backend, VARIANT, TARGET, None, tmp_path)
    assert engines == backend.theirs and (engines / render.COMPLETE).is_file()
    assert [p.name for p in (tmp_path / "engines").iterdir()] == [engines.name]  # our scratch copy is gone


def test_a_render_racing_a_published_one_keeps_it(tmp_path):
    class Racing(FakeBackend):
        def render(self, variant, target, draft, out_dir):
            theirs = render.render_repository(FakeBackend(), variant, target, draft, out_dir.parent.parent)
            self.theirs = theirs.stat().st_ino  # tells the two entries apart
            super().render(variant, target, draft, out_dir)

    backend = Racing()
    repo = render.render_repository(backend, VARIANT, TARGET, None, tmp_path)
    assert repo.stat().st_ino == backend.theirs
    render.stage_repository(repo, tmp_path / "run")  # whole and as published
    assert [p.name for p in (tmp_path / "repos").iterdir()] == [repo.name]

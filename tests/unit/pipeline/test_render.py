"""Rendered repositories and built engines: published with a manifest, verified where used."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from specops.methods.specs import NgramMethod
from specops.pipeline import render
from specops.run.variant import Variant
from specops.sources.entry_lock import Stored
from specops.sources.integrity import CacheCorruptError
from specops.sources.schemes import ModelArtifact

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
    repo = render.render_repository(FakeBackend(), VARIANT, TARGET, None, tmp_path).value
    staged = render.stage_repository(repo, tmp_path / "run" / "repository")
    assert (staged / "speculative" / "1" / "model.py").read_text() == "MODEL = 1\n"
    assert not (staged / render.COMPLETE).exists()


def test_an_edited_repository_is_refused_and_rendered_again_next_time(tmp_path):
    backend = FakeBackend()
    repo = render.render_repository(backend, VARIANT, TARGET, None, tmp_path).value
    (repo / "speculative" / "1" / "model.py").write_text("MODEL = 20\n")
    with pytest.raises(CacheCorruptError) as caught:
        render.stage_repository(repo, tmp_path / "run" / "repository")
    message = str(caught.value)
    assert f"cache entry {repo} is corrupt: speculative/1/model.py: size changed (10 -> 11 bytes)" in message
    assert "the next run renders the repository again" in message
    assert not (tmp_path / "run" / "repository").exists()
    again = render.render_repository(backend, VARIANT, TARGET, None, tmp_path)
    assert not again.cached and again.value == repo and (repo / "speculative" / "1" / "model.py").read_text() == "MODEL = 1\n"


def test_a_repository_rendered_before_manifests_is_recorded_on_first_use(tmp_path):
    repo = render.render_repository(FakeBackend(), VARIANT, TARGET, None, tmp_path).value
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
    first = render.build_engines(backend, VARIANT, TARGET, None, tmp_path)
    engines = first.value
    assert not first.cached and render.build_engines(backend, VARIANT, TARGET, None, tmp_path) == Stored(engines, True)
    assert backend.builds == 1
    (engines / "rank0.engine").write_bytes(b"\x05" * 100)
    with pytest.raises(CacheCorruptError, match=r"rank0.engine: size changed \(512 -> 100 bytes\).*builds the engines"):
        render.build_engines(backend, VARIANT, TARGET, None, tmp_path)
    assert render.build_engines(backend, VARIANT, TARGET, None, tmp_path) == Stored(engines, False)
    assert backend.builds == 2


class CrashingBackend(FakeBackend):
    def build(self, variant, target, draft, out_dir):
        (out_dir / "rank0.engine").write_bytes(b"\x05" * 10)  # half an engine, then the build dies
        raise RuntimeError("trtllm-build killed")


def test_a_build_that_dies_leaves_no_entry_behind(tmp_path):
    with pytest.raises(RuntimeError, match="killed"):
        render.build_engines(CrashingBackend(), VARIANT, TARGET, None, tmp_path)
    assert [p.suffix for p in (tmp_path / "engines").iterdir()] == [".lock"]  # neither a half entry nor its scratch
    assert render.build_engines(FakeBackend(), VARIANT, TARGET, None, tmp_path).value.is_dir()


class Checkpoints(FakeBackend):
    """Serves checkpoints as they are: builds nothing."""

    def build(self, variant, target, draft, out_dir):
        self.builds += 1
        return None


def _engines_entry(cache: Path) -> Path:
    (entry,) = (p for p in (cache / "engines").iterdir() if p.suffix != ".lock")
    return entry


def test_a_backend_that_builds_nothing_says_so_once(tmp_path):
    backend = Checkpoints()
    assert render.build_engines(backend, VARIANT, TARGET, None, tmp_path) == Stored(None, False)
    assert render.build_engines(backend, VARIANT, TARGET, None, tmp_path) == Stored(None, True)
    assert backend.builds == 1  # a later run reports the step cached without asking the backend
    # The marker holds no manifest: specops before it verified any engines entry with a `.complete`
    # (and called the marker corrupt); it finds no entry here and builds nothing again.
    entry = _engines_entry(tmp_path)
    assert [p.name for p in entry.iterdir()] == [render.NO_ENGINES]


def test_a_marker_entry_with_a_manifest_still_reads_as_no_engines(tmp_path):
    """What a6af35d wrote for a backend that builds nothing: the marker and a `.complete` manifest."""
    backend = Checkpoints()
    render.build_engines(backend, VARIANT, TARGET, None, tmp_path)
    entry = _engines_entry(tmp_path)
    (entry / render.COMPLETE).write_text('{"files": {}}')
    assert render.build_engines(backend, VARIANT, TARGET, None, tmp_path) == Stored(None, True)
    assert backend.builds == 1


def test_concurrent_renders_of_one_repository_render_it_once(tmp_path):
    """Runs rendering the same repository at once: one renders it under the entry's lock, the others wait for it
    and find it (a hit), so exactly one reports a miss."""
    from concurrent.futures import ThreadPoolExecutor

    class Slow(FakeBackend):
        renders = 0

        def render(self, variant, target, draft, out_dir):
            Slow.renders += 1
            time.sleep(0.3)  # long enough that the others look while it renders
            super().render(variant, target, draft, out_dir)

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: render.render_repository(Slow(), VARIANT, TARGET, None, tmp_path), range(4)))
    assert Slow.renders == 1 and sorted(g.cached for g in got) == [False, True, True, True]
    assert len({g.value for g in got}) == 1 and (got[0].value / render.COMPLETE).is_file()


def test_every_method_setting_is_in_the_repository_key():
    """A repository rendered for K=4 is never reused after K changes (nor after any other method field)."""
    key = lambda method: render.repository_key(FakeBackend(), Variant("speculative", method), TARGET, None)  # noqa: E731
    shipped = NgramMethod()
    changed = [NgramMethod(num_speculative_tokens=2), NgramMethod(prompt_lookup_min=1), NgramMethod(prompt_lookup_max=5)]
    keys = [key(shipped), *map(key, changed)]
    assert len(set(keys)) == len(keys), keys
    assert key(shipped) == key(NgramMethod())  # and the same settings find their entry

"""Training-data synthesis serves the target through the serving seam: the seed's vLLM container or the profile's
backend, stopped whatever happens to the synthesis; an endpoint needs no server."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import flows.prepare as prepare
import flows.serving as seam
from specops.draft.gpu import SYNTHESIS
from specops.pipeline.summarize import RunFacts
from specops.profile.loader import load_profile
from specops.sources.entry_lock import Stored
from specops.sources.schemes import Models

SERVER = object()


@pytest.fixture
def log(monkeypatch, tmp_path):
    """The tasks around the synthesis, replaced by fakes that log what they were asked; synthesis fails."""
    entries: list[tuple] = []
    stop_error: list[Exception] = []

    def stop_server(server, timeout_s, run, variant):
        entries.append(("stop", timeout_s))
        if stop_error:
            raise stop_error[0]

    def synthesize_training_data(profile, backend, server, variant, target, cache_dir, run):
        entries.append(("synthesize", server, variant))
        raise KeyError("synthesis failed")

    monkeypatch.setattr(prepare, "build_engine", lambda backend, v, models, run: Stored(None, False))
    monkeypatch.setattr(prepare, "render_repository", lambda backend, v, models, engines, run:
                        Stored(tmp_path / "repo", False))
    monkeypatch.setattr(seam, "start_server", lambda backend, v, repo, run: entries.append(
        ("start", backend.config.kind, v)) or SERVER)
    monkeypatch.setattr(seam, "stop_server", stop_server)
    monkeypatch.setattr(prepare, "synthesize_training_data", synthesize_training_data)
    return SimpleNamespace(entries=entries, stop_error=stop_error)


def _synthesize(profile: str, *overrides: str):
    loaded = load_profile(profile, ["serving.stop_timeout_s=7", *overrides])
    backend = SimpleNamespace(config=SimpleNamespace(kind="profile's"), serving=loaded.profile.serving)
    with pytest.raises(KeyError, match="synthesis failed"):
        prepare.synthesize(loaded, backend, "target", "run", "cache")
    return loaded.profile.draft.train.data


def test_the_seeds_vllm_container_is_served_and_stopped_when_synthesis_fails(log):
    _synthesize("eagle-vllm-seed")
    assert log.entries == [("start", "vllm-serve", SYNTHESIS), ("synthesize", SERVER, SYNTHESIS), ("stop", 7)]
    log.entries.clear()
    log.stop_error.append(RuntimeError("docker hangs"))  # a container that will not stop hides nothing
    _synthesize("eagle-vllm-seed")
    assert log.entries[-1] == ("stop", 7)


def test_the_profiles_backend_serves_as_many_instances_as_requests_in_flight(log):
    data = _synthesize("eagle3-local")
    (_, kind, variant), synthesized, stopped = log.entries
    assert kind == "profile's" and variant.name == "synthesis" and variant.parallel == data.concurrency
    assert synthesized == ("synthesize", SERVER, variant) and stopped == ("stop", 7)


def test_an_endpoint_answers_without_a_server(log):
    _synthesize("eagle3-local", "draft.train.data.endpoint=http://127.0.0.1:9")
    [(step, server, _)] = log.entries
    assert (step, server) == ("synthesize", None)


def test_a_repository_is_rendered_from_the_engines_built_and_a_runs_facts_note_each_cache_hit(monkeypatch, tmp_path):
    made = []
    monkeypatch.setattr(prepare, "build_engine", lambda backend, v, models, run:
                        made.append(("build", v, models)) or Stored(tmp_path / "engines", True))
    monkeypatch.setattr(prepare, "render_repository", lambda backend, v, models, engines, run:
                        made.append(("render", engines)) or Stored(tmp_path / "repo", False))
    facts, variant = RunFacts(), SimpleNamespace(name="speculative")
    models = Models(target=None, draft=None, cache=tmp_path)
    assert prepare.variant_repository(None, variant, models, None, facts) == tmp_path / "repo"
    assert made == [("build", variant, models), ("render", tmp_path / "engines")]
    assert facts.cached_steps == {"build speculative": True, "render speculative": False}
    assert prepare.variant_repository(None, variant, models, None) == tmp_path / "repo"  # no run's facts

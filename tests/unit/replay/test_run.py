"""A profile's replay (specops/replay/run.py): the settings, engine args and prompts it takes from the profile, and
its cache of greedy outputs. The vLLM venv's worker is replaced: tests/integration/replay runs the real one."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile
from specops.replay import run
from specops.replay.grid import NgramSetting, Prediction, SuffixSetting


def test_the_profiles_ngram_setting_is_the_one_vllm_serves():
    assert run.profile_setting(load_profile("ngram-vllm-serve-cpu")) == NgramSetting(min=2, max=3, k=4)
    # prompt_lookup_min unset: vLLM sets it to prompt_lookup_max (vllm/config/speculative.py)
    unset = load_profile("ngram-vllm-serve-cpu", ["method.prompt_lookup_min=null", "method.prompt_lookup_max=4"])
    assert run.profile_setting(unset) == NgramSetting(min=4, max=4, k=4)


def test_only_engine_args_that_decide_the_tokens_reach_the_offline_engine():
    loaded = load_profile("ngram-vllm-serve-cpu", ["backend.engine_args.max_num_seqs=7"])
    assert run.engine_args(loaded) == {"dtype": "float32", "max_model_len": 2048, "enforce_eager": True}


def test_a_prompt_selection_that_is_empty_is_named_as_the_profiles_field(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "cache_root", lambda: tmp_path)
    loaded = load_profile("ngram-vllm-serve-cpu", ["benchmark.prompt_offset=100000"])  # HumanEval has 164
    with pytest.raises(ProfileError, match="benchmark.prompts: no prompts selected"):
        run.workload_of(loaded)


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    """The target fetched without a download, the cache under tmp_path, the worker recording its requests."""
    asked = []

    class Target:
        sha256, path = "f" * 64, Path("/model")

    def worker(request, say):
        asked.append(request)
        n = request["output_tokens"]
        return {"sequences": [{"prompt": [1], "output": list(range(n))} for _ in request["prompts"]], "seconds": 0.0}

    monkeypatch.setattr(run, "fetch", lambda *a, **k: Target)
    monkeypatch.setattr(run, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(run, "run_worker", worker)
    return asked


def test_greedy_outputs_are_generated_once_per_target_prompts_and_length(stand_in, tmp_path):
    small = load_profile("ngram-vllm-serve-cpu", ["benchmark.num_requests=2", "benchmark.output_tokens=5"])
    first = run.greedy_outputs(small, lambda line: None)
    again = run.greedy_outputs(small, lambda line: None)
    assert first == again and len(stand_in) == 1
    assert stand_in[0]["prompts"] == [p.strip() for p in stand_in[0]["prompts"]]  # as the benchmark sends them
    longer = load_profile("ngram-vllm-serve-cpu", ["benchmark.num_requests=2", "benchmark.output_tokens=6"])
    assert len(run.greedy_outputs(longer, lambda line: None)[0]["output"]) == 6 + run.LOOKAHEAD and len(stand_in) == 2
    cached = [json.loads(p.read_text()) for p in (tmp_path / "replay").glob("greedy-*.json")]
    assert sorted(c["key"]["output_tokens"] for c in cached) == [5, 6]


def _cut_in_half(text: str) -> str:
    return text[: len(text) // 2]


def _no_sequences(text: str) -> str:
    return json.dumps({"sequences": []})


def _other_tokens(text: str) -> str:
    entry = json.loads(text)
    entry["sequences"][0]["output"][0] += 1
    return json.dumps(entry)


@pytest.mark.parametrize("damage", [_cut_in_half, _no_sequences, _other_tokens])
def test_a_damaged_greedy_output_entry_is_named_moved_aside_and_made_again(stand_in, tmp_path, damage):
    """Issue 51: such an entry failed every later replay of the target and prompts (JSONDecodeError, IndexError) and
    dropped every run's prediction, for good; one with other tokens was trusted as it was."""
    small = load_profile("ngram-vllm-serve-cpu", ["benchmark.num_requests=2", "benchmark.output_tokens=5"])
    first = run.greedy_outputs(small, lambda line: None)
    (entry,) = (tmp_path / "replay").glob("greedy-*.json")
    damaged = damage(entry.read_text())
    entry.write_text(damaged)
    said: list[str] = []
    assert run.greedy_outputs(small, said.append) == first and len(stand_in) == 2  # made again
    assert any(line.startswith(f"cache entry {entry} is damaged: ") and "moved to" in line for line in said), said
    (moved,) = (tmp_path / "replay").glob("greedy-*.json.corrupt-*")
    assert moved.read_text() == damaged  # the evidence, as it was found
    said.clear()
    assert run.greedy_outputs(small, said.append) == first and len(stand_in) == 2  # and verified next time
    assert not any("is damaged:" in line for line in said)


@pytest.mark.parametrize(("profile", "setting"), [
    ("ngram-vllm-serve-cpu", NgramSetting(min=1, max=5, k=8)),
    ("suffix-vllm-serve-cpu", SuffixSetting(depth=64, factor=2.0, min_prob=0.3, cached=0, k=64)),
])
def test_a_settings_overrides_serve_that_setting(profile, setting):
    """What make bench-pays serves is what the replay predicted: the overrides load back as the same setting."""
    assert run.profile_setting(load_profile(profile, setting.overrides())) == setting


def test_a_runs_prediction_is_its_own_settings_replay_and_says_what_the_engine_counted_beside_it(monkeypatch):
    asked = []

    def predict(loaded, settings, say, workload=None):  # a stand-in for the vLLM venv's worker (tests/integration)
        asked.extend(settings)
        return [Prediction.of(settings[0], [{"steps": 10, "emitted": 31, "drafted_steps": 8, "drafted": 24,
                                             "accepted": 12}])]

    monkeypatch.setattr(run, "predict", predict)
    loaded = load_profile("ngram-vllm-serve-cpu", ["benchmark.num_requests=1", "benchmark.warmup_requests=2"])
    got = run.predicted_for_run(loaded, say=lambda line: None)
    assert asked == [run.profile_setting(loaded)] and got.setting == asked[0].label()
    assert (got.accepted_per_step, got.tokens_per_step) == (1 + 12 / 8, 3.1)
    assert "n-gram matcher" in got.source and "2 warm-up request(s), not replayed" in got.source
    assert run.predicted_for_run(load_profile("eagle3-vllm-serve-cpu"), say=lambda line: None) is None

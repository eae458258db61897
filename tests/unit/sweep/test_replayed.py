"""A sweep's series from `specops replay`: the N best settings of the profile's own method, in rank order.

`predict` here is a stand-in (fixed tokens per step per setting): the real replay needs the vLLM venv and is covered
by tests/integration/replay/test_replay_vllm.py."""
from __future__ import annotations

import pytest

from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile
from specops.replay.grid import Prediction
from specops.sweep.grid import MAX_REPLAYED, SweepGrid, validate_grid
from specops.sweep.replayed import replayed_settings

COUNTS = {"emitted": 0, "steps": 1, "drafted_steps": 0, "accepted": 0, "drafted": 0}


def stand_in_predict(score):
    """A stand-in for specops.replay.run.predict: each setting's tokens/step is score(setting)."""
    seen = []

    def predict(loaded, settings):
        seen.extend(settings)
        return [Prediction.of(s, [COUNTS | {"emitted": round(score(s) * 1000), "steps": 1000}]) for s in settings]
    return predict, seen


def test_the_top_n_ngram_settings_in_rank_order_become_the_series():
    # Best where min is 1 and max is 5, then by K (a larger K predicts more); ties: the smaller K first.
    predict, seen = stand_in_predict(lambda s: 1 + (s.min == 1) + (s.max == 5) + min(s.k, 4) / 10)
    loaded = load_profile("ngram-vllm-serve-cpu")
    got, left_out = replayed_settings(loaded, 3, predict)
    assert all(s.method == "ngram" for s in seen) and len(seen) > 3  # the profile's own family, whole
    assert [(s.k, s.overrides) for s in got] == [
        (k, ("method.prompt_lookup_min=1", "method.prompt_lookup_max=5")) for k in (4, 5, 6)]
    grid = SweepGrid(draft_lengths=[], concurrencies=[1, 2], settings=got)
    assert [s.name for s in grid.series()] == ["k4-min1-max5", "k5-min1-max5", "k6-min1-max5"]
    validate_grid(loaded, grid)  # every replayed setting loads as the profile's overrides


def test_suffix_takes_only_cache_off_settings():
    predict, seen = stand_in_predict(lambda s: 2.0 + s.cached + s.depth / 100)
    got, _ = replayed_settings(load_profile("suffix-vllm-serve-cpu"), 2, predict)
    assert seen and all(s.cached == 0 for s in seen)
    assert all("method.max_cached_requests=0" in s.overrides for s in got)
    assert got[0].overrides[0] == "method.max_tree_depth=64"


@pytest.mark.parametrize(("profile", "n", "message"), [
    ("eagle-vllm-nested", 2, "has no replay: ngram and suffix do"),
    ("ngram-vllm-serve-cpu", MAX_REPLAYED + 1, f"give 1 to {MAX_REPLAYED} settings"),
])
def test_what_the_replay_cannot_give_is_refused_naming_the_flag(profile, n, message):
    predict, seen = stand_in_predict(lambda s: 1.0)
    with pytest.raises(ProfileError) as err:
        replayed_settings(load_profile(profile), n, predict)
    assert "--from-replay" in str(err.value) and message in str(err.value) and not seen

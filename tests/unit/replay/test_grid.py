"""The replay's settings and ranking (specops/replay/grid.py)."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from specops.replay.grid import NgramSetting, Prediction, SuffixSetting, ngram_grid, ranked, ranking_table, suffix_grid


def counts(steps, emitted, drafted_steps, drafted, accepted):
    return {"steps": steps, "emitted": emitted, "drafted_steps": drafted_steps, "drafted": drafted,
            "accepted": accepted}


def test_a_prediction_sums_over_prompts_and_keeps_each_prompts_own_figure():
    p = Prediction.of(NgramSetting(min=2, max=3, k=4), [counts(10, 30, 8, 32, 20), counts(30, 30, 0, 0, 0)])
    assert p.tokens_per_step == pytest.approx(60 / 40)
    assert p.prompt_tokens_per_step == [3.0, 1.0]
    assert p.per_drafted_step == pytest.approx(1 + 20 / 8)  # vLLM's counters: steps with a draft only
    assert p.acceptance_rate == pytest.approx(20 / 32)


def test_a_setting_that_never_drafts_has_no_acceptance_rather_than_zero():
    p = Prediction.of(NgramSetting(min=5, max=5, k=2), [counts(5, 5, 0, 0, 0)])
    assert p.acceptance_rate is None and p.per_drafted_step is None and p.tokens_per_step == 1.0


def test_ranking_is_best_first_and_of_equal_predictions_the_shorter_draft_first():
    same = [counts(10, 20, 10, 10, 10)]
    long, short = (Prediction.of(NgramSetting(min=1, max=2, k=k), same) for k in (8, 4))
    best = Prediction.of(SuffixSetting(), [counts(10, 25, 10, 30, 15)])
    assert [p.setting for p in ranked([long, short, best])] == [best.setting, short.setting, long.setting]


def test_the_table_shows_each_prompts_spread_marks_the_profiles_setting_and_says_it_is_not_a_speedup():
    mine = NgramSetting(min=2, max=3, k=4)
    looping = Prediction.of(mine, [counts(10, 10, 5, 5, 0), counts(4, 20, 4, 16, 16), counts(8, 12, 4, 4, 4)])
    text = ranking_table([looping], top=None, marked=mine)
    assert "1.00 / 1.50 / 5.00" in text
    assert "ngram min 2 max 3 K 4 (profile)" in text and "predicted speedup weighs" in text
    assert ranking_table([looping], top=None).count("(profile)") == 0


def test_the_grids_hold_only_settings_the_engine_accepts_and_the_asked_ones():
    grid = ngram_grid()
    assert all(s.min <= s.max for s in grid)
    for lo, hi, k in ((2, 3, 4), (4, 4, 4), (2, 4, 4), (2, 4, 6), (2, 4, 8), (1, 4, 8)):
        assert NgramSetting(min=lo, max=hi, k=k) in grid
    suffix = suffix_grid()
    assert SuffixSetting() in suffix  # vLLM's defaults, cache off
    assert {s.cached > 0 for s in suffix} == {True, False}


def test_a_setting_outside_the_engines_bounds_is_refused_naming_the_field():
    with pytest.raises(ValidationError, match="min_prob"):
        SuffixSetting(min_prob=1.5)
    with pytest.raises(ValidationError, match="k"):
        NgramSetting(min=1, max=2, k=0)


def test_a_method_has_a_replay_exactly_where_its_spec_names_one():
    """A method's spec names its replay (MethodConfig.replay) or has none: the replay's settings and the worker's
    proposers are those methods', so a new method with no replay is refused by `specops replay`, never missed."""
    from specops.methods import METHODS
    from specops.replay.grid import GRIDS, REPLAYS, replayable
    from specops.replay.worker import PROPOSERS

    named = {kind for kind in METHODS.names() if METHODS.get(kind).replay}
    assert named and set(replayable()) == named == set(REPLAYS) == set(PROPOSERS) == set(GRIDS) - {"all"}
    for kind, (setting, grid) in REPLAYS.items():  # each grid's settings are of its method's own type
        assert {type(s) for s in grid()} == {setting} and setting.model_fields["method"].default == kind

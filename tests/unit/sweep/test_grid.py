"""The sweep grid: its values, each cell's overrides and stored key, and refusals before any server starts."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile
from specops.sweep.grid import (
    BASE_SERIES,
    MAX_KEY,
    MIN_KEY,
    Series,
    SweepGrid,
    SweepSetting,
    cell_key,
    knob_settings,
    knob_values,
    series_dir,
    setting_label,
    validate_grid,
)


def test_values_are_sorted_and_cells_go_through_every_concurrency_per_draft_length():
    grid = SweepGrid(draft_lengths=[4, 1, 2], concurrencies=[2, 1])
    assert grid.draft_lengths == [1, 2, 4] and grid.concurrencies == [1, 2]
    assert [(s.k, c) for s, c in grid.cells()] == [(1, 1), (1, 2), (2, 1), (2, 2), (4, 1), (4, 2)]


@pytest.mark.parametrize(("field", "values", "message"), [
    ("draft_lengths", [2, 2, 3], "[2] given more than once"),
    ("concurrencies", [0, 1], "every value must be >= 1, got [0]"),
    ("draft_lengths", [], "at least one value"),
])
def test_bad_grid_values_name_the_field(field, values, message):
    good = {"draft_lengths": [1], "concurrencies": [1]}
    with pytest.raises(ValidationError) as err:
        SweepGrid(**(good | {field: values}))
    assert field in str(err.value) and message in str(err.value)


def test_a_boolean_is_no_draft_length():
    with pytest.raises(ValidationError):
        SweepGrid(draft_lengths=[True], concurrencies=[1])


def test_overrides_of_a_cell_and_of_the_base():
    assert Series(3).overrides(4) == ["method.num_speculative_tokens=3", "benchmark.concurrency=4"]
    assert BASE_SERIES.overrides(4) == ["benchmark.concurrency=4"]
    schedule = ("method.num_speculative_tokens=3", "backend.schedule=x")
    assert Series(3, schedule).overrides(2) == [*schedule, "method.num_speculative_tokens=3", "benchmark.concurrency=2"]
    assert Series(None, schedule).overrides(2) == [*schedule, "benchmark.concurrency=2"]


def test_a_series_names_its_directory_and_its_cells():
    assert [BASE_SERIES.name, Series(2).name, Series(4, ("x=1",)).name] == ["base", "k2", "schedule"]


def test_cell_key_is_stable_and_changes_with_every_input():
    key = cell_key("ab" * 32, ["benchmark.num_requests=4"], 2, 1)
    assert key == cell_key("ab" * 32, ["benchmark.num_requests=4"], 2, 1)
    assert len(key) == 64 and int(key, 16) >= 0
    others = {
        cell_key("cd" * 32, ["benchmark.num_requests=4"], 2, 1),
        cell_key("ab" * 32, ["benchmark.num_requests=8"], 2, 1),
        cell_key("ab" * 32, [], 2, 1),
        cell_key("ab" * 32, ["benchmark.num_requests=4"], 3, 1),
        cell_key("ab" * 32, ["benchmark.num_requests=4"], None, 1),
        cell_key("ab" * 32, ["benchmark.num_requests=4"], 2, 2),
    }
    assert key not in others and len(others) == 6


def test_cell_key_keeps_the_order_of_the_overrides():
    # The loader applies overrides in order, so a=1 then a=2 is another profile than a=2 then a=1.
    assert cell_key("ab" * 32, ["x=1", "x=2"], 1, 1) != cell_key("ab" * 32, ["x=2", "x=1"], 1, 1)


def test_cell_key_changes_with_the_cell_version(monkeypatch):
    import specops.sweep.grid as grid

    before = cell_key("ab" * 32, [], 1, 1)
    monkeypatch.setattr(grid, "SWEEP_CELL_VERSION", grid.SWEEP_CELL_VERSION + 1)
    assert cell_key("ab" * 32, [], 1, 1) != before


def test_validate_grid_returns_the_profile_with_the_user_overrides():
    loaded = validate_grid(load_profile("ngram-local", ["benchmark.num_requests=4"]),
                           SweepGrid(draft_lengths=[1, 2, 4], concurrencies=[1, 2]))
    assert loaded.profile.name == "ngram-local" and loaded.profile.benchmark.num_requests == 4


def test_a_draft_length_the_method_refuses_fails_before_any_server_starts():
    with pytest.raises(ProfileError) as err:
        validate_grid(load_profile("ngram-local", []), SweepGrid(draft_lengths=[4, 65], concurrencies=[1]))
    assert "method.num_speculative_tokens" in str(err.value) and "65" in str(err.value)
    assert "ngram-local.yaml" in str(err.value)


def test_a_concurrency_the_schema_refuses_fails_too():
    with pytest.raises(ProfileError) as err:
        validate_grid(load_profile("ngram-local", []), SweepGrid(draft_lengths=[1], concurrencies=[1, 2048]))
    assert "benchmark.concurrency" in str(err.value)


def test_a_method_without_draft_length_cannot_be_swept_over_k():
    with pytest.raises(ProfileError) as err:
        validate_grid(load_profile("ngram-local", ["method={kind: none}"]), SweepGrid(draft_lengths=[1], concurrencies=[1]))
    text = str(err.value)
    assert "ngram-local" in text and "method.num_speculative_tokens" in text and "'none'" in text
    assert "ngram" in text.split("methods with one:")[1]


def test_the_grid_owns_draft_length_and_concurrency():
    with pytest.raises(ProfileError) as err:
        validate_grid(load_profile("ngram-local", ["benchmark.concurrency=8"]), SweepGrid(draft_lengths=[1], concurrencies=[1]))
    assert "--set" in str(err.value) and "benchmark.concurrency=8" in str(err.value)


def test_a_setting_series_has_a_readable_filesystem_safe_name_and_a_plain_k_keeps_its_old_one():
    knobs = ("method.prompt_lookup_min=1", "method.prompt_lookup_max=5")
    assert Series(4).name == series_dir(4) == "k4"
    assert Series(4, settings=knobs).name == "k4-min1-max5"
    assert Series(4, settings=knobs).overrides(2) == [*knobs, "method.num_speculative_tokens=4",
                                                      "benchmark.concurrency=2"]
    assert setting_label(4, knobs) == "K=4 min=1 max=5" and setting_label(4) == "K=4"
    odd = Series(8, settings=("method.min_token_prob=0.1", "method.x=a/b c"))
    assert odd.name == "k8-prob0.1-xa_b_c" and "/" not in odd.name and " " not in odd.name


def test_knob_values_cross_the_draft_lengths_and_drop_min_above_max():
    settings = knob_settings([2, 4], {MIN_KEY: [1, 3], MAX_KEY: [2]})
    assert settings == [SweepSetting(k=2, overrides=(f"{MIN_KEY}=1", f"{MAX_KEY}=2")),
                        SweepSetting(k=4, overrides=(f"{MIN_KEY}=1", f"{MAX_KEY}=2"))]
    assert knob_settings([2], {MIN_KEY: [], MAX_KEY: []}) == []  # no knob: the plain K series
    assert [s.overrides for s in knob_settings([1], {MIN_KEY: [], MAX_KEY: [3, 5]})] == [(f"{MAX_KEY}=3",),
                                                                                        (f"{MAX_KEY}=5",)]
    with pytest.raises(ProfileError) as err:
        knob_settings([2], {MIN_KEY: [4], MAX_KEY: [2, 3]})
    assert "--ngram-min/--ngram-max" in str(err.value) and "prompt_lookup_min > " in str(err.value)


def test_a_grid_of_settings_keeps_their_order_and_draft_lengths_are_theirs():
    first, second = SweepSetting(k=8, overrides=(f"{MIN_KEY}=1",)), SweepSetting(k=2, overrides=(f"{MIN_KEY}=2",))
    grid = SweepGrid(draft_lengths=[], concurrencies=[1], settings=[first, second])
    assert grid.draft_lengths == [2, 8] and [s.name for s in grid.series()] == ["k8-min1", "k2-min2"]
    with pytest.raises(ValidationError, match="given more than once"):
        SweepGrid(draft_lengths=[], concurrencies=[1], settings=[first, first])


@pytest.mark.parametrize(("values", "method", "message"), [
    ([17], "ngram", "[17]: method.prompt_lookup_min takes 1 to 16"),
    ([2, 2], "ngram", "[2] given more than once"),
    ([1], "suffix", "is a knob of method 'ngram'; the profile's method is 'suffix'"),
])
def test_bad_knob_values_name_the_flag_and_the_bounds_of_the_method_spec(values, method, message):
    with pytest.raises(ProfileError) as err:
        knob_values("--ngram-min", MIN_KEY, values, method)
    assert "--ngram-min" in str(err.value) and message in str(err.value)


def test_validate_grid_loads_every_setting_of_the_profile():
    grid = SweepGrid(draft_lengths=[], concurrencies=[1], settings=[SweepSetting(k=2, overrides=(f"{MAX_KEY}=99",))])
    with pytest.raises(ProfileError, match="prompt_lookup_max"):
        validate_grid(load_profile("ngram-local", []), grid)

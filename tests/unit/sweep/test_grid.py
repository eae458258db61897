"""The sweep grid: its values, each cell's overrides and stored key, and refusals before any server starts."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from specops.profile.errors import ProfileError
from specops.sweep.grid import BASE_SERIES, Series, SweepGrid, cell_key, validate_grid


def test_values_are_sorted_and_cells_go_through_every_concurrency_per_draft_length():
    grid = SweepGrid(draft_lengths=[4, 1, 2], concurrencies=[2, 1])
    assert grid.draft_lengths == [1, 2, 4] and grid.concurrencies == [1, 2]
    assert grid.cells() == [(1, 1), (1, 2), (2, 1), (2, 2), (4, 1), (4, 2)]


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
    loaded = validate_grid("ngram-local", ["benchmark.num_requests=4"],
                           SweepGrid(draft_lengths=[1, 2, 4], concurrencies=[1, 2]))
    assert loaded.profile.name == "ngram-local" and loaded.profile.benchmark.num_requests == 4


def test_a_draft_length_the_method_refuses_fails_before_any_server_starts():
    with pytest.raises(ProfileError) as err:
        validate_grid("ngram-local", [], SweepGrid(draft_lengths=[4, 65], concurrencies=[1]))
    assert "method.num_speculative_tokens" in str(err.value) and "65" in str(err.value)
    assert "ngram-local.yaml" in str(err.value)


def test_a_concurrency_the_schema_refuses_fails_too():
    with pytest.raises(ProfileError) as err:
        validate_grid("ngram-local", [], SweepGrid(draft_lengths=[1], concurrencies=[1, 2048]))
    assert "benchmark.concurrency" in str(err.value)


def test_a_method_without_draft_length_cannot_be_swept_over_k():
    with pytest.raises(ProfileError) as err:
        validate_grid("ngram-local", ["method={kind: none}"], SweepGrid(draft_lengths=[1], concurrencies=[1]))
    text = str(err.value)
    assert "ngram-local" in text and "method.num_speculative_tokens" in text and "'none'" in text
    assert "ngram" in text.split("methods with one:")[1]


def test_the_grid_owns_draft_length_and_concurrency():
    with pytest.raises(ProfileError) as err:
        validate_grid("ngram-local", ["benchmark.concurrency=8"], SweepGrid(draft_lengths=[1], concurrencies=[1]))
    assert "--set" in str(err.value) and "benchmark.concurrency=8" in str(err.value)

"""A sweep is refused before anything starts where it could not measure each cell paired with the base: no base to
compare with, or a profile whose servers do not fit side by side (benchmark.interleave false)."""
from __future__ import annotations

import pytest
from prefect.logging import disable_run_logger

from specops.profile.loader import load_profile
from specops.sweep.grid import SweepGrid
from tasks.sweep import validate_sweep

GRID = SweepGrid(draft_lengths=[1, 2], concurrencies=[1, 2])


def test_a_profile_whose_servers_fit_side_by_side_is_swept():
    with disable_run_logger():
        assert validate_sweep.fn(load_profile("ngram-local", []), GRID).profile.benchmark.interleave


@pytest.mark.parametrize(("override", "field"), [("comparison.baseline=false", "comparison.baseline is false"),
                                                 ("benchmark.interleave=false", "benchmark.interleave is false")])
def test_a_sweep_that_could_not_pair_each_cell_with_the_base_is_refused_naming_the_field(override, field):
    with disable_run_logger(), pytest.raises(ValueError, match=field) as refused:
        validate_sweep.fn(load_profile("ngram-local", [override]), GRID)
    assert "ngram-local.yaml" in str(refused.value)


def test_a_gpu_profile_is_told_how_to_sweep():
    with disable_run_logger(), pytest.raises(ValueError, match="--set benchmark.interleave=true"):
        validate_sweep.fn(load_profile("eagle-vllm", []), GRID)

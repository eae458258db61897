"""What `calibrate` refuses before anything runs; what its A/A run serves."""
from __future__ import annotations

import pytest

from cli.main import EXIT_PROFILE, main
from specops.profile.calibration import load_calibration
from specops.profile.errors import ProfileError
from specops.run.variant import variants_of


def test_the_aa_run_serves_the_base_on_both_arms_with_the_profiles_own_design():
    loaded = load_calibration("ngram-local", ["benchmark.rounds=3"], runs=20)
    assert loaded.profile.method.kind == "none" and loaded.profile.benchmark.rounds == 3
    assert [v.method.kind for v in variants_of(loaded.profile.method, loaded.profile.comparison.baseline)] == \
        ["none", "none"]


def test_too_few_runs_and_no_base_arm_are_refused():
    with pytest.raises(ProfileError, match="calibrate: runs: 1: a calibration needs 2 A/A runs or more"):
        load_calibration("ngram-local", [], runs=1)
    with pytest.raises(ProfileError, match="comparison.baseline: false: an A/A calibration measures the base"):
        load_calibration("ngram-local", ["comparison.baseline=false"], runs=20)


def test_the_cli_refuses_before_prefect_starts(capsys):
    assert main(["calibrate", "ngram-local", "--runs", "0"]) == EXIT_PROFILE
    assert "runs: 0: a calibration needs 2 A/A runs or more" in capsys.readouterr().err

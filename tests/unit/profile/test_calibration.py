"""What `calibrate` refuses before anything runs; what its A/A run serves."""
from __future__ import annotations

import pytest

from cli.main import EXIT_PROFILE, main
from specops.profile.calibration import calibration_of
from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile, load_profile
from specops.run.variant import variants_of


def load_calibration(profile: str, overrides: list[str], runs: int) -> LoadedProfile:
    """As the calibrate flow has it: the profile loaded with the overrides, then its A/A run."""
    return calibration_of(load_profile(profile, overrides), runs)


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
    with pytest.raises(SystemExit) as refused:  # at the flag, with the form's bounds (argparse's usage error)
        main(["calibrate", "ngram-local", "--runs", "0"])
    assert refused.value.code == EXIT_PROFILE and "--runs: '0': give a whole number from 2 to" in capsys.readouterr().err
    assert main(["calibrate", "ngram-local", "--ab", "1"]) == EXIT_PROFILE  # a bound the form cannot show: the loader's
    assert "a/b" in capsys.readouterr().err.lower()


@pytest.mark.parametrize("overrides", [
    ["benchmark.tool=genai-perf"],  # round blocks only, one round
    ["benchmark.pairing=rounds"],
    ["benchmark.num_requests=1"],  # interleaved, but one prompt is one unit
])
def test_a_design_that_gives_no_interval_is_refused_with_the_override_that_fixes_it(overrides):
    with pytest.raises(ProfileError, match=r"benchmark: rounds 1 and .*no coverage to count; set --set "
                                           r"benchmark.rounds=3"):
        load_calibration("ngram-local", overrides, runs=20)
    assert load_calibration("ngram-local", [*overrides, "benchmark.rounds=3"], runs=20).profile.benchmark.rounds == 3


def test_the_default_interleaved_design_gives_intervals_and_is_taken():
    assert load_calibration("ngram-local", [], runs=20).profile.benchmark.interleave

"""What compare-profiles refuses before anything runs: one profile twice, other targets, fewer than two."""
from __future__ import annotations

import pytest

from cli.main import EXIT_PROFILE, main
from specops.profile.comparison import check_comparable
from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile


def loaded(*names: str, overrides: tuple[str, ...] = ()):
    return [load_profile(n, list(overrides)) for n in names]


def test_different_profiles_of_one_target_compare():
    check_comparable(loaded("ngram-local", "eagle3-local", "medusa-local"))


@pytest.mark.parametrize("names, twice", [
    (("ngram-local", "ngram-local"), "ngram-local.yaml"), (("ngram-local", "profiles/ngram-local.yaml"), "ngram-local.yaml"),
    (("eagle3-local", "ngram-local", "eagle3-local"), "eagle3-local.yaml")])
def test_one_profile_twice_is_refused_by_name_or_path(names, twice):
    with pytest.raises(ProfileError, match="these resolve to the same profile: ") as err:
        check_comparable(loaded(*names))
    message = str(err.value)
    assert message.count(twice) == 2 and "`specops run` it twice and `specops compare` the runs" in message


def test_one_profile_with_another_setting_is_two_profiles():
    two = [load_profile("ngram-local"), load_profile("ngram-local", ["method.num_speculative_tokens=2"])]
    check_comparable(two)


def test_fewer_than_two_and_other_targets_are_refused():
    with pytest.raises(ProfileError, match="two profiles or more"):
        check_comparable(loaded("ngram-local"))
    other = load_profile("ngram-local", ["target.source=hf://Qwen/Qwen3-0.6B"])
    with pytest.raises(ProfileError, match="of one target model side by side; these differ"):
        check_comparable([*loaded("eagle3-local"), other])


def test_the_cli_refuses_before_prefect_starts(capsys):
    assert main(["compare-profiles", "ngram-local", "ngram-local"]) == EXIT_PROFILE
    err = capsys.readouterr().err
    assert err.startswith("specops: invalid profile\n  compare-profiles: profiles: compare puts different profiles")

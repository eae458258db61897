"""Proposers in isolation, on hand-made token lists (no model)."""
from __future__ import annotations

import pytest

from specops.registry import UnknownName
from specops.runtime.proposers import PROPOSERS, NgramProposer, make_proposer


def ngram(k=4, lo=1, hi=3):
    return make_proposer(
        "ngram", {"num_speculative_tokens": k, "prompt_lookup_min": lo, "prompt_lookup_max": hi}
    )


def test_registry_knows_none_and_ngram():
    assert {"none", "ngram"} <= set(PROPOSERS)
    assert make_proposer("none").propose([1, 2, 3, 1, 2], 8, None) == []


def test_unknown_method_lists_known_ones():
    with pytest.raises(UnknownName, match=r"unknown speculative method 'eagle9'; allowed: .*ngram, none"):
        make_proposer("eagle9")


def test_unknown_option_lists_known_ones():
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['num_spec_tokens'\].*prompt_lookup_max"):
        make_proposer("ngram", {"num_spec_tokens": 3})
    with pytest.raises(ValueError, match="unknown option"):
        make_proposer("none", {"num_speculative_tokens": 3})


@pytest.mark.parametrize("options", [
    {"num_speculative_tokens": 0},
    {"prompt_lookup_min": 0},
    {"prompt_lookup_min": 4, "prompt_lookup_max": 3},
    {"num_speculative_tokens": "4"},
    {"num_speculative_tokens": True},
])
def test_ngram_rejects_bad_options(options):
    with pytest.raises(ValueError, match="ngram"):
        make_proposer("ngram", options)


def test_ngram_defaults():
    opts = make_proposer("ngram").options
    assert (opts.num_speculative_tokens, opts.prompt_lookup_min, opts.prompt_lookup_max) == (4, 2, 3)
    assert isinstance(make_proposer("ngram"), NgramProposer)


def test_copies_what_followed_the_earlier_occurrence():
    ctx = [5, 6, 7, 8, 9, 10, 11, 5, 6, 7]
    assert ngram(k=3).propose(ctx, 8, None) == [8, 9, 10]


def test_prefers_latest_occurrence():
    ctx = [1, 2, 3, 40, 41, 0, 1, 2, 3, 50, 51, 0, 2, 3]
    assert ngram(k=2).propose(ctx, 8, None) == [50, 51]


def test_longest_ngram_wins_over_a_more_recent_shorter_one():
    # [8, 9] occurs early followed by 100; a lone 9 occurs later followed by 200.
    ctx = [8, 9, 100, 101, 9, 200, 201, 8, 9]
    assert ngram(k=2, lo=1, hi=2).propose(ctx, 8, None) == [100, 101]
    assert ngram(k=2, lo=1, hi=1).propose(ctx, 8, None) == [200, 201]


def test_min_length_rules_out_short_matches():
    ctx = [9, 200, 201, 8, 9]
    assert ngram(k=2, lo=1, hi=3).propose(ctx, 8, None) == [200, 201]
    assert ngram(k=2, lo=2, hi=3).propose(ctx, 8, None) == []


def test_limit_and_available_tokens_cap_the_draft():
    ctx = [1, 2, 3, 4, 5, 1, 2]
    assert ngram(k=4).propose(ctx, 2, None) == [3, 4]
    assert ngram(k=4).propose(ctx, 0, None) == []
    # The match is near the end: only the tokens that exist can be proposed.
    assert ngram(k=4, lo=2).propose([7, 1, 2, 9, 1, 2], 8, None) == [9, 1, 2]


def test_repeated_token_run_proposes_the_run():
    assert ngram(k=4, lo=1, hi=3).propose([4, 4, 4, 4, 4], 8, None) == [4]
    assert ngram(k=4, lo=1, hi=2).propose([3, 4, 4, 4, 4, 4, 4], 8, None) == [4]


def test_no_match_and_short_contexts():
    assert ngram().propose([1, 2, 3, 4], 8, None) == []
    assert ngram().propose([1], 8, None) == []
    assert ngram().propose([], 8, None) == []

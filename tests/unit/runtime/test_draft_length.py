"""The adaptive draft length: measured costs and acceptance decide how many tokens to draft."""
from __future__ import annotations

from specops.runtime.draft_length import EXPLORE_EVERY, DraftLengthPolicy


def _calibrate(policy: DraftLengthPolicy, verify_cost, accept_first: int) -> None:
    """Run the calibration steps, feeding what each length costs and how many drafts pass."""
    for _ in range(2 * (policy.max_len + 1)):
        k = policy.choose()
        policy.record(k, min(k, accept_first), draft_s=0.005 * k, verify_s=verify_cost(k + 1))


def test_calibration_tries_every_length_twice():
    policy = DraftLengthPolicy(3)
    seen = [policy.choose() for _ in range(8)]
    assert sorted(seen) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_rejected_drafts_on_costly_verification_stop_drafting():
    policy = DraftLengthPolicy(4)
    _calibrate(policy, lambda tokens: 0.06 + 0.02 * (tokens - 1), accept_first=0)
    for _ in range(40):
        policy.record(1, 0, 0.005, 0.08)  # keep failing at the length the policy might pick
    choices = [policy.choose() for _ in range(EXPLORE_EVERY - 1)]
    assert max(set(choices), key=choices.count) == 0


def test_accepted_drafts_on_flat_verification_draft_the_maximum():
    policy = DraftLengthPolicy(4)
    _calibrate(policy, lambda tokens: 0.06, accept_first=4)
    choices = [policy.choose() for _ in range(EXPLORE_EVERY - 1)]
    assert max(set(choices), key=choices.count) == 4


def test_steep_verification_cost_prefers_a_short_draft():
    # One draft is nearly free to verify, more cost a lot: with ~half the first drafts
    # accepted and few beyond, one draft gives the most tokens per second.
    policy = DraftLengthPolicy(4)
    cost = lambda tokens: {1: 0.060, 2: 0.063, 3: 0.100, 4: 0.110, 5: 0.120}[tokens]  # noqa: E731
    for step in range(200):
        k = policy.choose()
        accepted = (1 if step % 2 else 0) if k else 0
        policy.record(k, accepted, 0.002 * k, cost(k + 1))
    choices = [policy.choose() for _ in range(EXPLORE_EVERY - 1)]
    assert max(set(choices), key=choices.count) == 1


def test_expected_tokens_follow_measured_prefix_acceptance():
    policy = DraftLengthPolicy(2)
    for _ in range(1000):
        policy.record(2, 1, 0.0, 0.1)  # first draft always accepted, second never
    assert abs(policy.expected_tokens(1) - 2.0) < 0.01
    assert abs(policy.expected_tokens(2) - 2.0) < 0.01


def test_a_cold_first_step_is_forgotten():
    """The first steps of a server cost many warm steps; they must not make plain steps look dear."""
    policy = DraftLengthPolicy(1)
    policy.record(0, 0, 0.0, 2.0)  # cold start of a plain step
    for _ in range(20):
        policy.record(0, 0, 0.0, 0.10)
        policy.record(1, 0, 0.01, 0.12)  # drafts never accepted, verifying one costs more
    policy.steps = 100  # past calibration
    choices = [policy.choose() for _ in range(EXPLORE_EVERY - 1)]
    assert max(set(choices), key=choices.count) == 0

"""The acceptance arithmetic against values computed by hand: deltas, rates, tokens per step, the bound."""
from __future__ import annotations

import pytest

from specops.acceptance.model import Acceptance, analytical_bound


def counters(drafts, drafted, accepted, steps, emitted, draft_s, verify_s, per_position=None) -> Acceptance:
    return Acceptance("runtime", drafts, drafted, accepted, accepted_per_position=per_position, num_steps=steps,
                      num_emitted_tokens=emitted, draft_seconds=draft_s, verify_seconds=verify_s)


def test_benchmark_window_is_after_minus_before():
    before = counters(10, 40, 20, 30, 60, 0.5, 3.0, [9, 7, 4])
    after = counters(110, 440, 260, 230, 560, 2.5, 23.0, [99, 87, 60, 14])
    window = after.since(before)
    assert (window.num_drafts, window.num_draft_tokens, window.num_accepted_tokens) == (100, 400, 240)
    assert (window.num_steps, window.num_emitted_tokens) == (200, 500)
    assert (window.draft_seconds, window.verify_seconds) == (2.0, 20.0)
    assert window.accepted_per_position == [90, 80, 56, 14]  # a position unseen before counts from zero
    assert window.acceptance_rate == 0.6  # 240 / 400
    assert window.mean_accepted_per_step == 3.4  # 1 + 240 / 100
    assert window.tokens_per_step == 2.5  # 500 emitted / 200 steps
    assert window.step_seconds == pytest.approx(0.11)  # (2 + 20) / 200
    assert window.position_rates == [0.9, 0.8, 0.56, 0.14]


def test_bound_is_tokens_per_step_times_the_step_cost_ratio():
    spec = counters(100, 400, 240, 200, 500, 2.0, 20.0)  # 2.5 tokens per 0.11 s step
    base = Acceptance("runtime", num_steps=500, num_emitted_tokens=500, draft_seconds=0.0, verify_seconds=25.0)
    # 2.5 tokens/step x 0.05 s base step / 0.11 s speculative step
    assert analytical_bound(spec, base) == pytest.approx(2.5 * 0.05 / 0.11)
    assert analytical_bound(spec, None) is None and analytical_bound(None, base) is None


def test_counters_that_never_see_the_benchmark_are_kept_whole():
    own = Acceptance("check requests only", 15, 60, 26, covers_benchmark=False)
    assert own.since(Acceptance("check requests only", 5, 20, 6, covers_benchmark=False)) is own
    why = Acceptance.unavailable("image:tag", "no source")
    assert why.since(Acceptance("x", 1, 2, 3)) is why and why.acceptance_rate is None
    assert why.source == "acceptance unavailable on image:tag: no source"

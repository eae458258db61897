"""Each timed step's share of a run's wall, every moment counted once."""
from __future__ import annotations

import pytest

from specops.run.spans import wall_shares


def test_side_by_side_spans_of_one_step_count_once():
    shares = wall_shares({"serve": [(0.0, 10.0), (2.0, 12.0)], "check": [(12.0, 15.0)]}, 0.0, 20.0)
    assert shares == {"serve": 12.0, "check": 3.0}


def test_a_step_inside_another_takes_its_own_moments():
    # the draft step serves its synthesis server: that span is serve's, the rest of the draft step draft's
    shares = wall_shares({"draft": [(0.0, 30.0)], "serve": [(5.0, 15.0)]}, 0.0, 40.0)
    assert shares == {"draft": 20.0, "serve": 10.0} and sum(shares.values()) == 30.0


def test_spans_outside_the_wall_are_cut_to_it_and_steps_keep_the_order_they_ran_in():
    shares = wall_shares({"report": [(38.0, 45.0)], "download": [(-1.0, 2.0)], "waiting for": [(2.0, 4.0)]}, 0.0, 40.0)
    assert list(shares) == ["download", "waiting for", "report"]
    assert shares == pytest.approx({"download": 2.0, "waiting for": 2.0, "report": 2.0})

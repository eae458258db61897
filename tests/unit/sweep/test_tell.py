"""How many units would tell two speedups apart, from the spread measured."""
from __future__ import annotations

from specops.sweep.tell import MAX_UNITS, units_to_tell, would_tell


def test_a_wider_spread_or_a_smaller_gap_needs_more_units():
    narrow, wide = units_to_tell(8, [(1.10, 1.20)], True), units_to_tell(8, [(1.10, 1.40)], True)
    assert narrow < wide
    assert units_to_tell(8, [(1.05, 1.15)], True) > narrow  # the same spread, half the gap


def test_two_cells_need_their_spreads_added():
    alone = units_to_tell(8, [(1.20, 1.30)], True)
    pair = units_to_tell(8, [(1.20, 1.30), (1.0, 1.0833)], False)  # the same gap, from a cell of that spread
    assert pair > alone


def test_no_count_where_the_points_agree_or_there_is_no_spread():
    assert units_to_tell(8, [(1.0, 1.1)], True) is None
    assert units_to_tell(1, [(1.2, 1.5)], True) is None
    assert would_tell(1, "prompts", [(1.2, 1.5)]).startswith("no spread to size a rerun from (one prompt)")
    assert f"more than {MAX_UNITS} rounds" in would_tell(3, "rounds", [(1.0001, 1.2)])
    needed = units_to_tell(4, [(1.1, 1.3)], True)
    assert would_tell(4, "rounds", [(1.1, 1.3)]).endswith(f"(--set benchmark.rounds={needed})")

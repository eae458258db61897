"""A sweep's choice per category: each category judged by the sweep's own rule on its own speedups, and a best
setting that differs by category said so."""
from __future__ import annotations

from specops.sweep.analysis import Cell
from specops.sweep.by_category import category_choices, category_lines


def cell(k: int, c: int, categories: dict[str, tuple[float, float, float]]) -> Cell:
    return Cell(k=k, concurrency=c, speedup=1.3, speedup_low=1.1, speedup_high=1.5, spec_tok_s=None, base_tok_s=None,
                mean_acceptance_length=None, position_rates=None, run_uid=None, status="ok", categories=categories)


def test_each_category_gets_the_rule_on_its_own_speedups_and_a_difference_is_said():
    cells = [cell(1, 1, {"code": (1.2, 1.1, 1.3), "chat": (1.15, 1.05, 1.25)}),
             cell(4, 1, {"code": (2.0, 1.8, 2.2), "chat": (1.0, 0.8, 1.2)})]
    chosen = category_choices(cells)
    assert chosen["code"][1].k == 4 and "beats the base, apart from every other K" in chosen["code"][1].why
    assert chosen["chat"][1].k == 1  # K=4 cannot be told from the base for chat; K=1 beats it and stands apart
    lines = category_lines(cells)
    assert "code: K=4" in lines[1] and "chat: K=1" in lines[1]
    assert "the best setting differs by category" in lines[2]


def test_categories_that_agree_say_no_difference_and_cells_without_categories_say_nothing():
    same = [cell(1, 1, {"code": (1.2, 1.1, 1.3), "chat": (1.3, 1.2, 1.4)}),
            cell(4, 1, {"code": (1.0, 0.9, 1.1), "chat": (0.9, 0.8, 1.0)})]
    assert not any("differs" in line for line in category_lines(same))
    assert category_lines([cell(1, 1, {})]) == [] and category_choices([cell(1, 1, {})]) == {}
    undecided = [cell(1, 1, {"code": (1.5, 1.2, 1.8), "chat": (1.05, 0.9, 1.2)})]
    assert "differs by category" in category_lines(undecided)[-1]  # one pays, the other cannot tell

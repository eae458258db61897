"""The trend report: both files written, the violating runs marked, and the edge cases (one run, a
metric some runs lack, only failed runs, none)."""
from __future__ import annotations

import pytest

from specops.regression.metrics import METRICS
from specops.regression.policy import RegressionPolicy
from specops.regression.trend import trend_figure, write_trend
from specops.results.model import Status
from tests.unit.regression.runs import baseline, run

POLICY = RegressionPolicy()


def test_write_trend_writes_a_self_contained_page_and_a_png(tmp_path):
    history = [*baseline(4, positions=[0.8, 0.5]), run(4, speedup=1.2, positions=[0.8, 0.3]),
               run(5, status=Status.INVALID)]
    html, png = write_trend(history, POLICY, tmp_path / "trends" / "ngram-local")
    assert (html.name, png.name) == ("trend.html", "trend.png")
    page = html.read_text()
    assert "plotly.js v" in page and '<script src="https://cdn.plot.ly' not in page  # embedded, not fetched
    for name in METRICS:  # plotly's JSON writes "/" as "\u002f"
        assert METRICS[name].label.replace("/", "\\u002f") in page
    assert "acceptance rate, draft position 1" in page and history[4].run_id in page
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_the_figure_marks_exactly_the_violating_runs():
    history = [*baseline(4), run(4, speedup=1.2, overrides=["draft.ngram=<1>"]), run(5, status=Status.INVALID)]
    figure = trend_figure(history, POLICY)
    marked = [t for t in figure.data if t.name == "violates"]
    assert [len(t.x) for t in marked] == [1, 0, 0, 0]  # speedup's row only
    assert history[4].run_id in marked[0].hovertext[0] and "draft.ngram=&lt;1&gt;" in marked[0].hovertext[0]
    baselines = next(t for t in figure.data if t.name.startswith("baseline"))
    assert list(baselines.y) == [None, None, None, 1.4, 1.4]  # the first three runs have no baseline yet
    invalid = [t for t in figure.data if t.name == "lossless check failed"]
    assert len(invalid) == 4 and all(len(t.x) == 1 for t in invalid)


def test_one_run_runs_lacking_a_metric_and_only_failed_runs_still_draw(tmp_path):
    for i, history in enumerate([[run(0)], [run(0), run(1, positions=[0.5]), run(2)],
                                 [run(0, status=Status.FAILED)]]):
        html, png = write_trend(history, POLICY, tmp_path / str(i))
        assert html.stat().st_size > 1_000_000 and png.stat().st_size > 1_000
    rows = trend_figure([run(0), run(1, positions=[0.5]), run(2)], POLICY).layout.annotations
    assert [a.text for a in rows][-1] == "acceptance rate, draft position 0"


def test_no_runs_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no runs to draw a trend of"):
        write_trend([], POLICY, tmp_path)
    assert not list(tmp_path.iterdir())

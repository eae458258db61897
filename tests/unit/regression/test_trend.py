"""The trend report: both files written, the violating runs marked, the PNG's baseline, labelled bands, dates and
verdict colours (issue 39), and the edge cases (one run, a metric some runs lack, only failed runs, none)."""
from __future__ import annotations

import pytest
from matplotlib import dates as mdates
from matplotlib.colors import to_rgb

from specops.charts.figure import plt
from specops.regression.metrics import METRICS
from specops.regression.policy import RegressionPolicy
from specops.regression.trend import BAND_COLORS, VERDICT_COLORS, png_figure, trend_figure, write_trend
from specops.regression.verdict import Verdict
from specops.results.model import Status
from tests.results_factory import T0
from tests.unit.regression.runs import aa_run, baseline, run

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
    assert [a.text for a in rows][-1] == "acceptance rate, draft position 1"


def test_no_runs_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no runs to draw a trend of"):
        write_trend([], POLICY, tmp_path)
    assert not list(tmp_path.iterdir())


def test_the_png_draws_baseline_and_bands_on_dates_points_in_their_verdicts_colour():
    aa = [aa_run(0.1 * i, p) for i, p in enumerate([0.95, 1.05, 0.97, 1.04, 1.0])]
    history = [*aa, *(run(d, speedup=s, positions=[0.8, 0.0]) for d, s in enumerate([1.3, 1.4, 1.5, 1.4])),
               run(4, speedup=0.9, positions=[0.8, 0.0]), run(5, tok_s=11.0, host_tok_s=8.0, positions=[0.8, 0.0])]
    fig, _ = png_figure(history, POLICY)
    try:
        axes = {ax.get_title(): ax for ax in fig.axes}
        assert "acceptance rate, draft position 1" in axes and not [t for t in axes if "position 0" in t]
        speedup = axes["speedup (x)"]
        assert [line.get_label() for line in speedup.lines] == ["runs", "baseline"]
        bands = {c.get_label(): c for c in speedup.collections if "band" in c.get_label()}
        assert "A/A-widened band" in bands and set(bands) <= {"noise band", "A/A-widened band"}  # each labelled
        assert isinstance(speedup.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
        assert abs(mdates.num2date(speedup.get_xlim()[0]).timestamp() - T0) < 2 * 86400  # an axis of dates
        dots = {c.get_label(): c for c in speedup.collections if c.get_label() in {v.value for v in Verdict}}
        assert tuple(dots["suspicious"].get_facecolor()[0][:3]) == pytest.approx(
            to_rgb(VERDICT_COLORS[Verdict.SUSPICIOUS]))  # the 0.9x run, the verdict's colour
        assert len(dots["suspicious"].get_offsets()) == 1 and "insufficient-data" in dots
        drift = [c.get_label() for c in axes["tokens/s (speculative)"].collections]
        assert "host-drift band (base arm moved: not judged)" in drift and "host-drift" in drift
        zero = next(c for c in axes["acceptance rate, draft position 2"].collections
                    if c.get_label() == "counting band (Wilson 95%)")
        top = zero.get_paths()[0].vertices[:, 1]
        assert top.max() - top.min() > 0.01  # a zero baseline's band has width
        assert BAND_COLORS.keys() >= set(bands)
        handles = [t.get_text() for t in fig.legends[0].get_texts()]
        assert {"baseline", "A/A-widened band", "counting band (Wilson 95%)", "suspicious"} <= set(handles)
    finally:
        plt.close(fig)


CPU = "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"  # a real CPU's name: the baseline keys are long


def _shape(result, requests: int, tokens: int):
    return result.model_copy(update={"benchmark": result.benchmark.model_copy(
        update={"num_requests": requests, "output_tokens": tokens})})


def test_the_png_holds_only_runs_of_the_newest_runs_baseline_key_and_its_legend_fits(tmp_path):
    # The nightly: a 4 x 32 run drawn in the 8 x 48 panels stretched their axes, its long key clipped the
    # legend, and mean_acceptance_length's zero-width band said nothing of the rule it leaves.
    history = [*(run(d, cpu=CPU, positions=[0.8, 0.5]) for d in range(4)), run(5, cpu=CPU, tok_s=11.0, host_tok_s=8.0,
                                                                               positions=[0.8, 0.5])]
    other = _shape(run(4.5, cpu=CPU, tok_s=5.0, speedup=2.0, positions=[0.9, 0.6]), 4, 32)
    fig, rect = png_figure([*history, other], POLICY)
    try:
        axes = {ax.get_title(): ax for ax in fig.axes}
        values = [y for line in axes["speedup (x)"].lines if line.get_label().startswith("runs") for y in line.get_ydata()]
        assert values == [1.4] * 5  # the 2.0x of the other shape is not in the panel
        assert "1 run of other hardware or benchmark shapes not drawn" in fig._suptitle.get_text().replace("\n", " ")
        fig.tight_layout(rect=rect)
        fig.canvas.draw()
        legend = fig.legends[0].get_window_extent()
        assert fig.bbox.x0 <= legend.x0 and legend.x1 <= fig.bbox.x1, (legend, fig.bbox)  # not clipped at the sides
        assert all(legend.y1 <= ax.get_tightbbox().y0 for ax in fig.axes)  # nor under the panels
        texts = [t.get_text().replace("\n", " ") for t in fig.legends[0].get_texts()]
        # the baseline runs measured the same acceptance length: the rule is drawn and said
        assert "threshold (baseline runs identical: no noise band)" in texts
        limit = next(line for line in axes["accepted/step (speculative)"].lines
                     if line.get_label().startswith("threshold"))
        assert list(limit.get_ydata()) == pytest.approx([2.5 * 0.95] * 2)
    finally:
        plt.close(fig)

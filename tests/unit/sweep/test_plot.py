"""What the sweep's figures draw, read from the matplotlib figure each writes (caught as it is saved)."""
from __future__ import annotations

import pytest
from matplotlib.colors import to_rgba
from matplotlib.container import ErrorbarContainer

from specops.sweep import plot
from specops.sweep.analysis import Cell


def cell(k: int, c: int, low: float, point: float, high: float, rates: list[float] | None = None) -> Cell:
    return Cell(k=k, concurrency=c, speedup=point, speedup_low=low, speedup_high=high, spec_tok_s=None,
                base_tok_s=None, mean_acceptance_length=None, position_rates=rates, run_uid=None, status="ok",
                units=4)


@pytest.fixture
def drawn(monkeypatch):
    """The figures the plots hand to save_figure, by file name (written all the same)."""
    figures = {}
    save = plot.save_figure

    def keep(fig, path, *args, **kwargs):
        figures[path.name] = fig
        return save(fig, path, *args, **kwargs)

    monkeypatch.setattr(plot, "save_figure", keep)
    return figures


# The sweep: two Ks at one concurrency, K=2's interval inside K=1's.
CELLS = [cell(1, 1, 0.98, 1.08, 1.19, [0.62]), cell(2, 1, 0.95, 1.02, 1.10, [0.60, 0.41])]


def test_the_speedup_whiskers_read_dodged_capped_and_wide(drawn, tmp_path):
    plot.write_sweep_plots(CELLS, tmp_path)
    ax = drawn["sweep-speedup.png"].axes[0]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2  # a whisker per K, not a band of no width at a single concurrency
    segments = [bar.lines[2][0].get_segments()[0] for bar in bars]
    xs = [segment[0][0] for segment in segments]
    assert xs[0] != pytest.approx(xs[1])  # dodged: K=2's is not hidden behind K=1's
    assert [(s[0][1], s[1][1]) for s in segments] == [pytest.approx((0.98, 1.19)), pytest.approx((0.95, 1.10))]
    assert all(len(bar.lines[1]) == 2 for bar in bars)  # caps at both ends
    assert all(bar.lines[2][0].get_linewidth()[0] >= 1.5 for bar in bars)  # visible, not hairlines
    # both intervals hold 1.00x: hollow points, and the legend says what hollow means
    points = [line for line in ax.lines if line.get_marker() == "o" and len(line.get_xdata()) == 1]
    assert len(points) == 2 and all(to_rgba(p.get_markerfacecolor()) == to_rgba("white") for p in points)
    assert "hollow: cannot tell from 1.00x" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_draft_positions_tick_at_whole_numbers(drawn, tmp_path):
    plot.write_sweep_plots(CELLS, tmp_path)
    ax = drawn["sweep-acceptance.png"].axes[0]
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks == [1, 2]

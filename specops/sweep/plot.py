"""A sweep's PNGs: speedup vs concurrency per series, acceptance per draft position per series."""
from __future__ import annotations

from pathlib import Path

from specops.charts.figure import label_acceptance_axes, plt, save_figure
from specops.results.paired import LEVEL
from specops.sweep.analysis import Cell, Side, by_series

# Each series' points are shifted by this factor per step on the log2 concurrency axis, centred on the measured
# concurrency: two Ks' whiskers at one concurrency side by side instead of one hiding the other.
DODGE = 2 ** 0.08


def _speedup_plot(cells: list[Cell], path: Path) -> Path:
    """Speedup vs concurrency per series: each cell's point with its interval as a capped whisker, the series
    dodged apart at each concurrency; a hollow point where the interval holds 1.00x (cannot tell)."""
    fig, ax = plt.subplots(figsize=(6.4, 4))
    concurrencies = sorted({c.concurrency for c in cells})
    series = by_series([c for c in cells if c.usable])
    for i, (label, group) in enumerate(series.items()):
        shift = DODGE ** (i - (len(series) - 1) / 2)
        xs, ys = [c.concurrency * shift for c in group], [c.speedup for c in group]
        line, = ax.plot(xs, ys, linewidth=1, label=label)
        color = line.get_color()
        errors = [[max(0.0, c.speedup - c.speedup_low) if c.has_interval else 0.0 for c in group],
                  [max(0.0, c.speedup_high - c.speedup) if c.has_interval else 0.0 for c in group]]
        ax.errorbar(xs, ys, yerr=errors, fmt="none", ecolor=color, elinewidth=1.8, capsize=5, capthick=1.8)
        for x, c in zip(xs, group):
            told = c.side is not Side.UNCLEAR
            ax.plot([x], [c.speedup], marker="o", markersize=7, markeredgewidth=1.8, color=color,
                    markerfacecolor=color if told else "white", zorder=3)
    ax.axhline(1.0, color="#555555", linestyle="--", linewidth=1, label="base")
    ax.plot([], [], marker="o", linestyle="none", color="#555555", markerfacecolor="white", markeredgewidth=1.8,
            label="hollow: cannot tell from 1.00x")
    ax.set_xscale("log", base=2)
    ax.set_xticks(concurrencies, [str(c) for c in concurrencies])
    ax.minorticks_off()
    if concurrencies:  # room for the dodged whiskers at the ends
        ax.set_xlim(concurrencies[0] / DODGE ** (len(series) + 1), concurrencies[-1] * DODGE ** (len(series) + 1))
    ax.set_xlabel("concurrency")
    ax.set_ylabel("speedup over the base")
    ax.set_title(f"Speedup vs concurrency per draft length ({LEVEL:.0%} interval)", fontsize=10)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def _acceptance_plot(cells: list[Cell], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    longest = 0
    for label, group in by_series([c for c in cells if c.usable]).items():
        rated = [c for c in group if c.position_rates]
        if not rated:
            continue
        # One line per K: the lowest concurrency's rates (acceptance depends on the draft, not the load).
        rates = rated[0].position_rates
        longest = max(longest, len(rates))
        ax.plot(range(1, len(rates) + 1), rates, marker="o", label=f"{label} (concurrency {rated[0].concurrency})")
    label_acceptance_axes(ax, "Acceptance rate per draft position")
    if longest:
        ax.set_xlim(0.5, longest + 0.5)
    return save_figure(fig, path)


def write_sweep_plots(cells: list[Cell], out_dir: Path) -> list[Path]:
    out_dir = Path(out_dir)
    return [_speedup_plot(cells, out_dir / "sweep-speedup.png"),
            _acceptance_plot(cells, out_dir / "sweep-acceptance.png")]

"""The PNGs of a run (its variants side by side), of a sweep (speedup vs concurrency per K; acceptance per draft
position per K) and of a comparison, and what every specops figure shares: how it is written (atomically, then
closed) and how an acceptance-per-draft-position panel is labelled."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and workers
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from specops.atomic_file import write_figure  # noqa: E402
from specops.report.categories import draw_category_panel  # noqa: E402
from specops.report.tables import spread_text  # noqa: E402
from specops.results.model import RunResult  # noqa: E402
from specops.results.paired import LEVEL  # noqa: E402
from specops.sweep.analysis import Cell, Side, by_series  # noqa: E402


def save_figure(fig, path: Path, dpi: int = 110, rect: tuple[float, ...] | None = None) -> Path:
    """The figure laid out (within `rect`, default the whole figure) and written to `path` atomically, then closed
    (pyplot keeps every open figure). Every specops figure is drawn with this module's pyplot, on Agg."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(rect=rect)
    try:
        write_figure(fig, path, dpi=dpi)
    finally:
        plt.close(fig)
    return path


def label_acceptance_axes(ax, title: str) -> None:
    """Axes of acceptance rate per draft position (whole numbers: no tick at 1.2 or 1.4); a legend of the lines
    drawn, or why there are none."""
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("draft position")
    ax.set_ylabel("acceptance rate")
    ax.set_ylim(0, 1.05)
    ax.set_title(title, fontsize=10)
    if ax.lines:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no per-position acceptance measured", ha="center", va="center", transform=ax.transAxes)


PANELS = [
    ("output_token_throughput_tok_s", "output tokens/s"),
    ("inter_token_latency_ms_p50", "inter-token latency p50 (ms)"),
    ("request_latency_ms_p50", "request latency p50 (ms)"),
]


def _per_prompt_panel(ax, result: RunResult) -> None:
    """Each prompt's speedup against 1.0 and the overall headline, or why there is none."""
    spread = result.speedup.per_prompt if result.speedup else None
    ax.set_title("speedup per prompt", fontsize=9)
    ax.tick_params(labelsize=8)
    if spread is None or spread.prompts < 2:
        why = spread_text(result) or "no speedup measured"
        ax.text(0.5, 0.5, why.replace(": ", ":\n", 1), ha="center", va="center", transform=ax.transAxes, fontsize=7,
                wrap=True)
        return
    prompts = sorted(spread.by_prompt)
    ax.bar(prompts, [spread.by_prompt[p] for p in prompts], color="#4c72b0")
    ax.axhline(1.0, color="#555555", linestyle="--", linewidth=1, label="base")
    ax.axhline(result.speedup.point, color="#c44e52", linewidth=1, label=f"overall {result.speedup.point:.2f}x")
    ax.set_xlabel("prompt", fontsize=8)
    ax.legend(fontsize=7)


def write_plot(path: Path, result: RunResult) -> Path:
    """The variants' figures side by side, each prompt's speedup, and each category's where the prompts have some."""
    panels = len(PANELS) + 1 + bool(result.workload and result.workload.categories)
    fig, axes = plt.subplots(1, panels, figsize=(4 * panels, 3.2))
    measured = [v for v in result.variants if v.metrics is not None]
    names = [v.name for v in measured]
    colors = ["#4c72b0" if n == "speculative" else "#999999" for n in names]
    for ax, (key, label) in zip(axes, PANELS):
        values = [getattr(v.metrics, key) or 0.0 for v in measured]
        bars = ax.bar(names, values, color=colors)
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.tick_params(labelsize=8)
    _per_prompt_panel(axes[len(PANELS)], result)
    if panels > len(PANELS) + 1:
        draw_category_panel(axes[-1], result)
    speedup = f", {result.speedup.text()}" if result.speedup else ""
    fig.suptitle(f"{result.profile} ({result.verdict.value}{speedup})", fontsize=10)
    return save_figure(fig, path)


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


def write_compare_plot(results: list[RunResult], path: Path) -> Path:
    """Speedup per profile with its interval, against the base line at 1.0."""
    measured = [r for r in results if r.speedup is not None]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.4 * len(measured) + 2), 3.6))
    names = [r.profile for r in measured]
    points = [r.speedup.point for r in measured]
    errors = [[max(0.0, r.speedup.point - (r.speedup.low if r.speedup.low is not None else r.speedup.point))
               for r in measured],
              [max(0.0, (r.speedup.high if r.speedup.high is not None else r.speedup.point) - r.speedup.point)
               for r in measured]]
    colors = ["#4c72b0" if r.verdict.value in ("VALID", "UNCHECKED") else "#c44e52" for r in measured]
    bars = ax.bar(names, points, yerr=errors, capsize=4, color=colors)
    ax.bar_label(bars, fmt="%.2fx", fontsize=8)
    ax.axhline(1.0, color="#555555", linestyle="--", linewidth=1)
    ax.set_ylabel("speedup over the base")
    ax.set_title(f"Speedup per profile ({LEVEL:.0%} interval; red: not VALID)", fontsize=10)
    ax.tick_params(axis="x", labelrotation=20, labelsize=8)
    return save_figure(fig, path)

"""The PNGs of a run (its variants side by side) and of a comparison (a sweep draws its own: sweep/plot.py)."""
from __future__ import annotations

from pathlib import Path

from specops.charts.figure import plt, save_figure
from specops.report.categories import draw_category_panel
from specops.report.tables import spread_text
from specops.results.figures import FIGURES
from specops.results.model import RunResult
from specops.results.paired import LEVEL

PANELS = [FIGURES[key] for key in ("tokens_per_s", "itl_p50", "latency_p50")]


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
    for ax, panel in zip(axes, PANELS):
        values = [panel.on(v) or 0.0 for v in measured]
        bars = ax.bar(names, values, color=colors)
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
        ax.set_title(panel.header, fontsize=9)
        ax.tick_params(labelsize=8)
    _per_prompt_panel(axes[len(PANELS)], result)
    if panels > len(PANELS) + 1:
        draw_category_panel(axes[-1], result)
    speedup = f", {result.speedup.text()}" if result.speedup else ""
    fig.suptitle(f"{result.profile} ({result.verdict.value}{speedup})", fontsize=10)
    return save_figure(fig, path)


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

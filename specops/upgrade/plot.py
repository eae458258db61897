"""upgrade.png: each side's speedup with its interval, and its acceptance per draft position with intervals."""
from __future__ import annotations

from pathlib import Path

from specops.charts.figure import label_acceptance_axes, plt, save_figure
from specops.results.model import RunResult
from specops.results.paired import LEVEL
from specops.upgrade.sides import Side
from specops.upgrade.table import position_estimates, speedup_estimate

COLORS = ("#8c8c8c", "#4c72b0")  # before, after


def write_upgrade_plot(sides: list[Side], results: list[RunResult | None], path: Path) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    labels = [f"{side.label}\n{side.backend}" for side in sides]
    for i, (result, color) in enumerate(zip(results, COLORS)):
        e = speedup_estimate(result)
        if e is None:
            left.text(i, 1.0, "not measured", ha="center", fontsize=8)
            continue
        low, high = (e.low, e.high) if e.has_interval else (e.point, e.point)
        left.bar(i, e.point, color=color, yerr=[[e.point - low], [high - e.point]], capsize=4)
        left.text(i + 0.1, e.point, f"{e.point:.2f}x", ha="left", va="bottom", fontsize=8)  # beside the error bar
    left.axhline(1.0, color="#555555", linestyle="--", linewidth=1)
    left.set_xticks(range(len(labels)), labels, fontsize=8)
    left.set_ylabel("speedup over the base")
    left.set_title(f"Speedup ({LEVEL:.0%} interval)", fontsize=10)
    for side, result, color in zip(sides, results, COLORS):
        positions = position_estimates(result)
        if not positions:
            continue
        xs = range(1, len(positions) + 1)
        right.plot(xs, [p.point for p in positions], marker="o", color=color, label=f"{side.label} ({side.backend})")
        right.fill_between(xs, [p.low for p in positions], [p.high for p in positions], color=color, alpha=0.2)
    longest = max((len(position_estimates(r)) for r in results), default=0)
    right.set_xticks(range(1, longest + 1))
    label_acceptance_axes(right, "Acceptance per draft position (Wilson, per step)")
    return save_figure(fig, path)

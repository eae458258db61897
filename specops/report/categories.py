"""The answer per category in a run's report: the table, comparison.csv's rows and the plot's panel."""
from __future__ import annotations

from specops.results.categories import CategoryFigures
from specops.results.figures import FIGURES, interval_text
from specops.results.model import RunResult
from specops.results.paired import LEVEL

ACCEPTED = FIGURES["accepted_per_step"]


def _acceptance(f: CategoryFigures) -> str:
    measured = ACCEPTED.cell(f.accepted_per_step)
    if f.predicted_accepted_per_step is None:
        return measured
    return f"{measured} (predicted {ACCEPTED.cell(f.predicted_accepted_per_step)})"


def category_rows(result: RunResult) -> list[dict[str, str]]:
    """One row per category, as people read it: the speedup with its interval and what it says."""
    w = result.workload
    rows = []
    for f in (w.categories if w else []):
        s = f.speedup
        speedup = "-" if s is None else interval_text(s.point, s.low, s.high) + ("" if s.has_interval
                                                                                 else " (no interval)")
        rows.append({"category": f.category, "prompts": str(f.prompts), "weight": f"{f.weight:.0%}",
                     f"speedup ({LEVEL:.0%})": speedup, "": f.verdict(), ACCEPTED.label: _acceptance(f)})
    return rows


def category_lines(result: RunResult) -> list[str]:
    """The per-category table of report.md, under a line saying how the overall figure weighs them."""
    rows = category_rows(result)
    if not rows:
        return []
    w = result.workload
    headers = list(rows[0])
    lines = [f"Per category ({w.api} requests; the speedup above is {w.mix_text()}; 'cannot tell' where a "
             f"category's interval reaches 1.00x or it has none; {ACCEPTED.label}: the engine's per-request counts, "
             f"the replay's prediction beside):", "",
             "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return lines + ["| " + " | ".join(row.values()) + " |" for row in rows] + [""]


def category_csv_rows(result: RunResult) -> list[dict]:
    """comparison.csv's rows of the categories (variant speculative, a `category` column), beside the variants'."""
    w = result.workload
    out = []
    for f in (w.categories if w else []):
        s = f.speedup
        out.append({"variant": "speculative", "category": f.category, "category_prompts": f.prompts,
                    "category_weight": f.weight, "speedup_vs_base": s.point if s else None,
                    "speedup_low": s.low if s else None, "speedup_high": s.high if s else None,
                    "mean_accepted_per_step": f.accepted_per_step,
                    "predicted_accepted_per_step": f.predicted_accepted_per_step,
                    "valid": result.verdict.value, "status": result.status.value})
    return out


def draw_category_panel(ax, result: RunResult) -> None:
    """Each category's speedup with its interval against 1.0 (base) and the overall figure."""
    figures = result.workload.categories if result.workload else []
    ax.set_title(f"speedup per category ({LEVEL:.0%})", fontsize=9)
    ax.tick_params(labelsize=8)
    xs = list(range(len(figures)))
    points = [f.speedup.point if f.speedup else float("nan") for f in figures]
    low = [p - f.speedup.low if f.speedup and f.speedup.low is not None else 0.0 for p, f in zip(points, figures)]
    high = [f.speedup.high - p if f.speedup and f.speedup.high is not None else 0.0 for p, f in zip(points, figures)]
    colors = ["#55a868" if f.verdict() == "faster" else "#c44e52" if f.verdict() == "slower" else "#8c8c8c"
              for f in figures]
    for x, p, lo, hi, color in zip(xs, points, low, high, colors):
        ax.errorbar([x], [p], yerr=[[lo], [hi]], fmt="o", color=color, capsize=4, elinewidth=2, markersize=6)
    ax.axhline(1.0, color="#555555", linestyle="--", linewidth=1, label="base")
    if result.speedup is not None:
        ax.axhline(result.speedup.point, color="#4c72b0", linewidth=1, label=f"overall {result.speedup.point:.2f}x")
    ax.set_xticks(xs, [f.category for f in figures], rotation=30, ha="right")
    ax.set_yscale("log")  # a ratio's interval is symmetric on the log scale
    ax.yaxis.set_major_formatter(lambda value, _: f"{value:g}x")
    ax.legend(fontsize=7)

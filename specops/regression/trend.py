"""The trend report of one profile: each tracked metric over time with its baseline and noise band,
the violating runs marked; an interactive HTML page (plotly) and a PNG of the same (matplotlib).

The HTML embeds plotly.js (~4.7 MB) instead of loading it from a CDN: workers and the machines
reading artifacts may be offline, and a report that renders blank there is worse than a big one.
"""
from __future__ import annotations

import html
import math
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import plotly.graph_objects as go
from matplotlib import dates as mdates
from plotly.subplots import make_subplots

from specops.atomic_file import replacing
from specops.charts.figure import plt, save_figure
from specops.regression.metrics import metric, metric_values, order_key
from specops.regression.policy import RegressionPolicy
from specops.regression.runs import baseline_key, chronological, lossless_failed
from specops.regression.verdict import (
    AA_BAND,
    COUNT_BAND,
    EXACT_BAND,
    NOISE_BAND,
    Point,
    Verdict,
    point_verdicts,
    series,
)
from specops.results.calibration import is_calibration
from specops.results.model import RunResult
from specops.settings import artifacts_root

HTML_NAME, PNG_NAME = "trend.html", "trend.png"
COLORS = ["#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860"]  # one per baseline key
VIOLATING, IMPROVED, INVALID = "#d62728", "#2ca02c", "#000000"
# Each point in the colour of its verdict (as if it were the newest run), each band in that of what set it.
VERDICT_COLORS = {Verdict.REGRESSION: VIOLATING, Verdict.SUSPICIOUS: "#ff7f0e", Verdict.IMPROVED: IMPROVED,
                  Verdict.OK: "#1f77b4", Verdict.INSUFFICIENT: "#9e9e9e", Verdict.HOST_DRIFT: "#9467bd"}
HOST_DRIFT_BAND = "host-drift band (base arm moved: not judged)"
BAND_COLORS = {NOISE_BAND: "#7f7f7f", AA_BAND: "#17becf", COUNT_BAND: "#bcbd22", HOST_DRIFT_BAND: "#9467bd",
               EXACT_BAND: "#7f7f7f"}
# Where the band has no width, the line a run must stay on the right side of: the baseline x the threshold.
EXACT_LIMIT = "threshold (baseline runs identical: no noise band)"
LEGEND_COLUMNS, LEGEND_WRAP = 3, 48  # at most; fewer columns where the labels would not fit the figure's width


def trend_dir(profile: str) -> Path:
    """Where a profile's trend report lives: artifacts/trends/<profile>/, rewritten by every judgement."""
    return artifacts_root() / "trends" / profile


def _when(run: RunResult) -> datetime:
    return datetime.fromtimestamp(run.started_at, UTC)


def _hover(point: Point) -> str:
    run = point.run
    lines = [f"run {run.run_id}", f"uid {run.uid[:12]}", _when(run).strftime("%Y-%m-%d %H:%M UTC"),
             f"host {run.host.hostname} ({baseline_key(run)})",
             f"overrides: {', '.join(run.overrides) or 'none'}", f"value {point.value:.4g}"]
    if point.baseline is not None:
        lines.append(f"baseline {point.baseline:.4g} (band {point.band[0]:.4g}-{point.band[1]:.4g}, "
                     f"{len(point.baseline_uids)} runs)")
    else:
        lines.append(f"no baseline yet ({len(point.baseline_uids)} earlier runs)")
    return "<br>".join(html.escape(line) for line in lines)


def _groups(points: list[Point]) -> dict[str, list[Point]]:
    groups: dict[str, list[Point]] = {}
    for point in points:
        groups.setdefault(baseline_key(point.run), []).append(point)
    return groups


def _band_label(point: Point) -> str:
    return HOST_DRIFT_BAND if point.unjudged else point.band_kind


def _segments(points: list[Point]) -> list[list[Point]]:
    """Runs of consecutive points that have a band of one kind: one band polygon each."""
    out: list[list[Point]] = [[]]
    for point in points:
        if point.band is None or (out[-1] and _band_label(out[-1][-1]) != _band_label(point)):
            out.append([])
        if point.band is not None:
            out[-1].append(point)
    return [segment for segment in out if segment]


def _invalid_points(history: list[RunResult]) -> dict[str, list[tuple[RunResult, float]]]:
    """Values of runs whose lossless check failed, per metric: shown, never judged."""
    out: dict[str, list[tuple[RunResult, float]]] = {}
    for run in chronological(history):
        if lossless_failed(run):
            for name, value in metric_values(run).items():
                out.setdefault(name, []).append((run, value))
    return out


def _checked(history: list[RunResult]) -> str:
    if not history:
        raise ValueError("no runs to draw a trend of: the results database has none for this profile")
    profiles = sorted({r.profile for r in history})
    if len(profiles) > 1:
        raise ValueError(f"a trend report is of one profile; got {', '.join(profiles)}")
    return profiles[0]


def _title(profile: str, drawn: list[RunResult], left_out: int, policy: RegressionPolicy) -> str:
    other = (f" ({left_out} run{'s' * (left_out != 1)} of other hardware or benchmark shapes not drawn: each is "
             "judged against its own)") if left_out else ""
    key = f"; {baseline_key(drawn[-1])}" if drawn else ""
    return (f"{profile}: {len(drawn)} runs{key}{other}; baseline = median of the last {policy.baseline_runs} ok runs "
            f"(>= {policy.min_baseline_runs}) within {policy.window_days:g} days, "
            f"band +-{policy.noise_mads:g} x 1.4826 x MAD on the log scale")


def _drawn(history: list[RunResult]) -> list[RunResult]:
    """The runs that share the newest run's baseline key (its hardware and benchmark shape): the runs its verdicts
    are judged against. A run of another shape (4 x 32 beside 8 x 48) has a baseline of its own, and drawn in the
    same panels it only stretched their axes."""
    newest = [r for r in chronological(history) if not is_calibration(r)] or chronological(history)
    key = baseline_key(newest[-1])
    return [r for r in history if baseline_key(r) == key]


def _add_html_row(fig: go.Figure, row: int, points: list[Point], invalid: list[tuple[RunResult, float]],
                  first: bool) -> None:
    groups = _groups(points)
    for index, (key, group) in enumerate(groups.items()):
        color = COLORS[index % len(COLORS)]
        legend, seen = dict(legendgroup=key, showlegend=first), set()
        which = f" ({key})" if len(groups) > 1 else ""  # one baseline key: the title's, a long one squeezed the plot
        for segment in _segments(group):
            xs, label = [_when(p.run) for p in segment], _band_label(segment[0])
            fig.add_trace(go.Scatter(
                x=xs + xs[::-1], y=[p.band[1] for p in segment] + [p.band[0] for p in segment][::-1],
                fill="toself", fillcolor=BAND_COLORS[label], opacity=0.25, line=dict(width=0), hoverinfo="skip",
                name=f"{label}{which}", legendgroup=key, showlegend=first and label not in seen), row=row, col=1)
            seen.add(label)
        fig.add_trace(go.Scatter(
            x=[_when(p.run) for p in group], y=[p.baseline for p in group], mode="lines",
            line=dict(color=color, dash="dash"), name=f"baseline{which}", hoverinfo="skip", **legend),
            row=row, col=1)
        fig.add_trace(go.Scatter(
            x=[_when(p.run) for p in group], y=[p.value for p in group], mode="markers+lines",
            line=dict(color=color, width=1), name=f"runs{which}, coloured by verdict",
            marker=dict(color=[VERDICT_COLORS[v] for v in point_verdicts(group)], size=7),
            hovertext=[_hover(p) for p in group], hoverinfo="text", **legend), row=row, col=1)
    for label, color, symbol, pick in (("violates", VIOLATING, "x", lambda p: p.violates),
                                       ("improved", IMPROVED, "triangle-up", lambda p: p.improves)):
        marked = [p for p in points if pick(p)]
        fig.add_trace(go.Scatter(
            x=[_when(p.run) for p in marked], y=[p.value for p in marked], mode="markers",
            marker=dict(color=color, size=12, symbol=symbol), name=label, legendgroup=label, showlegend=first,
            hovertext=[_hover(p) for p in marked], hoverinfo="text"), row=row, col=1)
    if invalid:
        fig.add_trace(go.Scatter(
            x=[_when(r) for r, _ in invalid], y=[v for _, v in invalid], mode="markers",
            marker=dict(color=INVALID, size=11, symbol="x-thin", line=dict(width=2, color=INVALID)),
            name="lossless check failed", legendgroup="invalid", showlegend=first,
            hovertext=[html.escape(f"run {r.run_id}: outputs differ from the base's") for r, _ in invalid],
            hoverinfo="text"), row=row, col=1)


def trend_figure(history: list[RunResult], policy: RegressionPolicy) -> go.Figure:
    """The interactive figure: one row per metric, one trace group per baseline key."""
    title, metrics, invalid = _prepared(history, policy)
    title = dict(text=html.escape(title), font=dict(size=13))
    names = list(metrics)
    if not names:  # only failed runs: the page says so instead of failing
        fig = go.Figure()
        fig.add_annotation(text="no run measured a tracked metric", showarrow=False)
        fig.update_layout(title=title)
        return fig
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True,
                        subplot_titles=[metric(n).label for n in names],
                        vertical_spacing=min(0.06, 0.5 / max(len(names) - 1, 1)))
    for row, name in enumerate(names, start=1):
        _add_html_row(fig, row, metrics[name], invalid.get(name, []), first=row == 1)
    fig.update_layout(title=title, height=max(320, 240 * len(names)), hovermode="closest", template="plotly_white")
    return fig


def _png_row(ax, name: str, points: list[Point], invalid: list[tuple[RunResult, float]], threshold: float) -> None:
    groups = _groups(points)
    for index, (key, group) in enumerate(groups.items()):
        color, xs = COLORS[index % len(COLORS)], [_when(p.run) for p in group]
        which = f" ({key})" if len(groups) > 1 else ""  # one baseline key: the title's, no need to repeat it
        ax.plot(xs, [p.value for p in group], "-", color=color, linewidth=1, label=f"runs{which}")
        ax.plot(xs, [math.nan if p.baseline is None else p.baseline for p in group], "--", color=color, linewidth=1.2,
                label=f"baseline{which}")
        for segment in _segments(group):
            at, kind = [_when(p.run) for p in segment], _band_label(segment[0])
            lows, highs = [p.band[0] for p in segment], [p.band[1] for p in segment]
            if kind == EXACT_BAND:  # nothing to fill: the threshold decides, so it is drawn
                ax.plot(at, [p.baseline * threshold for p in segment], ":", color=BAND_COLORS[kind], linewidth=1.4,
                        marker="_" if len(segment) == 1 else None, label=EXACT_LIMIT)
            elif len(segment) > 1:
                ax.fill_between(at, lows, highs, color=BAND_COLORS[kind], alpha=0.25, linewidth=0, label=kind)
            else:  # one run's band: a bar, where a polygon would have no width
                ax.vlines(at, lows, highs, color=BAND_COLORS[kind], alpha=0.4, linewidth=6, label=kind)
        verdicts = point_verdicts(group)
        for verdict in dict.fromkeys(verdicts):
            picked = [p for p, v in zip(group, verdicts) if v is verdict]
            ax.scatter([_when(p.run) for p in picked], [p.value for p in picked], color=VERDICT_COLORS[verdict], s=22,
                       zorder=3, label=verdict.value)
    if points and all(p.baseline is None for p in points):
        ax.text(0.01, 0.92, f"no baseline or band yet: {points[-1].runs_needed} more run(s) needed", fontsize=7,
                transform=ax.transAxes, va="top")
    if invalid:
        ax.scatter([_when(r) for r, _ in invalid], [v for _, v in invalid], color=INVALID, marker="x", s=50, zorder=3,
                   label="lossless check failed")
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_title(metric(name).label, fontsize=9)
    ax.tick_params(labelsize=7)


def _fitted_legend(fig, legend: dict[str, object]) -> float:
    """One legend under the rows, its labels wrapped and in as many columns (up to LEGEND_COLUMNS) as fit the
    figure's width; the height it takes, as a fraction of the figure's."""
    if not legend:
        return 0.0
    labels = [textwrap.fill(label, LEGEND_WRAP) for label in legend]
    renderer = fig.canvas.get_renderer()
    for ncol in range(min(LEGEND_COLUMNS, len(labels)), 0, -1):
        drawn = fig.legend(list(legend.values()), labels, loc="lower center", ncol=ncol, fontsize=7)
        box = drawn.get_window_extent(renderer)
        if box.width <= fig.bbox.width * 0.98 or ncol == 1:
            return (box.height + 6) / fig.bbox.height
        drawn.remove()
    return 0.0


def png_figure(history: list[RunResult], policy: RegressionPolicy):
    """The same series as a matplotlib figure: per metric, its runs coloured by verdict, baseline, band, dates."""
    title, metrics, invalid = _prepared(history, policy)
    names = list(metrics)
    fig, axes = plt.subplots(max(len(names), 1), 1, figsize=(9, 1.6 + 2.2 * max(len(names), 1)), sharex=True,
                             squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        _png_row(ax, name, metrics[name], invalid.get(name, []), policy.threshold(name))
    if not names:
        axes[0, 0].text(0.5, 0.5, "no run measured a tracked metric", ha="center", va="center")
    legend: dict[str, object] = {}  # one entry per label over every row
    for ax in axes[:, 0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    fig.suptitle(textwrap.fill(title, 140), fontsize=8)
    return fig, (0, _fitted_legend(fig, legend), 1, 0.97)


def write_png(path: Path, history: list[RunResult], policy: RegressionPolicy) -> Path:
    """The same series as a static image, for places that show no HTML."""
    fig, rect = png_figure(history, policy)
    return save_figure(fig, path, dpi=100, rect=rect)


def _prepared(history: list[RunResult], policy: RegressionPolicy) -> tuple[
        str, dict[str, list[Point]], dict[str, list[tuple[RunResult, float]]]]:
    """The title, each metric's points (registry order) and the invalid runs' values, of the runs that share the
    newest run's baseline key; ValueError for no runs."""
    profile = _checked(history)
    drawn = _drawn(history)
    metrics = series(drawn, policy)
    invalid = _invalid_points(drawn)
    for name in invalid:  # a metric only invalid runs carry still gets its row
        metrics.setdefault(name, [])
    title = _title(profile, drawn, len(history) - len(drawn), policy)
    return title, {name: metrics[name] for name in sorted(metrics, key=order_key)}, invalid


def write_trend(history: list[RunResult], policy: RegressionPolicy, out_dir: Path) -> tuple[Path, Path]:
    """`out_dir`/trend.html (self-contained) and trend.png for one profile's runs; ValueError for no runs."""
    figure = trend_figure(history, policy)  # checks the runs before anything is written
    out_dir.mkdir(parents=True, exist_ok=True)
    html_path = out_dir / HTML_NAME
    with replacing(html_path) as tmp:
        figure.write_html(tmp, include_plotlyjs=True, full_html=True)
    return html_path, write_png(out_dir / PNG_NAME, history, policy)

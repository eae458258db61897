"""The trend report of one profile: each tracked metric over time with its baseline and noise band,
the violating runs marked; an interactive HTML page (plotly) and a PNG of the same (matplotlib).

The HTML embeds plotly.js (~4.7 MB) instead of loading it from a CDN: workers and the machines
reading artifacts may be offline, and a report that renders blank there is worse than a big one.
"""
from __future__ import annotations

import html
import math
from datetime import UTC, datetime
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specops.atomic_file import replacing
from specops.regression.metrics import metric, metric_values, order_key
from specops.regression.policy import RegressionPolicy
from specops.regression.runs import baseline_key, chronological, lossless_failed
from specops.regression.verdict import Point, series
from specops.report.plot import plt, save_figure
from specops.results.model import RunResult
from specops.run.roots import artifacts_root

HTML_NAME, PNG_NAME = "trend.html", "trend.png"
COLORS = ["#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860"]  # one per baseline key
VIOLATING, IMPROVED, INVALID = "#d62728", "#2ca02c", "#000000"


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


def _segments(points: list[Point]) -> list[list[Point]]:
    """Runs of consecutive points that have a baseline: one band polygon each."""
    out: list[list[Point]] = [[]]
    for point in points:
        if point.band is None:
            out.append([])
        else:
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


def _title(profile: str, history: list[RunResult], policy: RegressionPolicy) -> str:
    return (f"{profile}: {len(history)} runs; baseline = median of the last {policy.baseline_runs} ok runs "
            f"(>= {policy.min_baseline_runs}) within {policy.window_days:g} days, "
            f"band +-{policy.noise_mads:g} x 1.4826 x MAD on the log scale")


def _add_html_row(fig: go.Figure, row: int, points: list[Point], invalid: list[tuple[RunResult, float]],
                  first: bool) -> None:
    for index, (key, group) in enumerate(_groups(points).items()):
        color = COLORS[index % len(COLORS)]
        legend = dict(legendgroup=key, showlegend=first)
        for n, segment in enumerate(_segments(group)):
            xs = [_when(p.run) for p in segment]
            fig.add_trace(go.Scatter(
                x=xs + xs[::-1], y=[p.band[1] for p in segment] + [p.band[0] for p in segment][::-1],
                fill="toself", fillcolor="rgba(128,128,128,0.2)", line=dict(width=0), hoverinfo="skip",
                name=f"noise band ({key})", legendgroup=key, showlegend=first and n == 0), row=row, col=1)
        fig.add_trace(go.Scatter(
            x=[_when(p.run) for p in group], y=[p.baseline for p in group], mode="lines",
            line=dict(color=color, dash="dash"), name=f"baseline ({key})", hoverinfo="skip", **legend),
            row=row, col=1)
        fig.add_trace(go.Scatter(
            x=[_when(p.run) for p in group], y=[p.value for p in group], mode="markers+lines",
            line=dict(color=color, width=1), marker=dict(color=color, size=7), name=f"runs ({key})",
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
    profile, metrics, invalid = _prepared(history, policy)
    title = dict(text=html.escape(_title(profile, history, policy)), font=dict(size=13))
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


def _png_row(ax, name: str, points: list[Point], invalid: list[tuple[RunResult, float]]) -> None:
    for index, (key, group) in enumerate(_groups(points).items()):
        color = COLORS[index % len(COLORS)]
        xs = [_when(p.run) for p in group]
        ax.plot(xs, [p.value for p in group], "o-", color=color, markersize=4, linewidth=1, label=key)
        ax.plot(xs, [math.nan if p.baseline is None else p.baseline for p in group], "--", color=color, linewidth=1)
        for segment in _segments(group):
            ax.fill_between([_when(p.run) for p in segment], [p.band[0] for p in segment],
                            [p.band[1] for p in segment], color="grey", alpha=0.2, linewidth=0)
    for label, color, marker, pick in (("violates", VIOLATING, "X", lambda p: p.violates),
                                       ("improved", IMPROVED, "^", lambda p: p.improves)):
        if marked := [p for p in points if pick(p)]:
            ax.scatter([_when(p.run) for p in marked], [p.value for p in marked], color=color, marker=marker, s=60,
                       zorder=3, label=label)
    if invalid:
        ax.scatter([_when(r) for r, _ in invalid], [v for _, v in invalid], color=INVALID, marker="x", s=50, zorder=3,
                   label="lossless check failed")
    ax.set_title(metric(name).label, fontsize=9)
    ax.tick_params(labelsize=7)


def write_png(path: Path, history: list[RunResult], policy: RegressionPolicy) -> Path:
    """The same series as a static image, for places that show no HTML."""
    profile, metrics, invalid = _prepared(history, policy)
    names = list(metrics)
    fig, axes = plt.subplots(max(len(names), 1), 1, figsize=(9, 1.2 + 2.2 * max(len(names), 1)), sharex=True,
                             squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        _png_row(ax, name, metrics[name], invalid.get(name, []))
    if not names:
        axes[0, 0].text(0.5, 0.5, "no run measured a tracked metric", ha="center", va="center")
    legend: dict[str, object] = {}  # one entry per label over every row
    for ax in axes[:, 0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    if legend:
        fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=min(len(legend), 4), fontsize=7)
    fig.suptitle(_title(profile, history, policy), fontsize=8)
    fig.autofmt_xdate()
    return save_figure(fig, path, dpi=100, rect=(0, 0.03 if legend else 0, 1, 0.98))


def _prepared(history: list[RunResult], policy: RegressionPolicy) -> tuple[
        str, dict[str, list[Point]], dict[str, list[tuple[RunResult, float]]]]:
    """The profile, each metric's points (registry order) and the invalid runs' values; ValueError for no runs."""
    profile = _checked(history)
    metrics = series(history, policy)
    invalid = _invalid_points(history)
    for name in invalid:  # a metric only invalid runs carry still gets its row
        metrics.setdefault(name, [])
    return profile, {name: metrics[name] for name in sorted(metrics, key=order_key)}, invalid


def write_trend(history: list[RunResult], policy: RegressionPolicy, out_dir: Path) -> tuple[Path, Path]:
    """`out_dir`/trend.html (self-contained) and trend.png for one profile's runs; ValueError for no runs."""
    figure = trend_figure(history, policy)  # checks the runs before anything is written
    out_dir.mkdir(parents=True, exist_ok=True)
    html_path = out_dir / HTML_NAME
    with replacing(html_path) as tmp:
        figure.write_html(tmp, include_plotlyjs=True, full_html=True)
    return html_path, write_png(out_dir / PNG_NAME, history, policy)

"""A PNG comparing the variants: throughput and latency side by side."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and workers
import matplotlib.pyplot as plt  # noqa: E402

from specops.report.figure import save_figure  # noqa: E402
from specops.results.model import RunResult  # noqa: E402

PANELS = [
    ("output_token_throughput_tok_s", "output tokens/s"),
    ("inter_token_latency_ms_p50", "inter-token latency p50 (ms)"),
    ("request_latency_ms_p50", "request latency p50 (ms)"),
]


def write_plot(path: Path, result: RunResult) -> Path:
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4 * len(PANELS), 3.2))
    measured = [v for v in result.variants if v.metrics is not None]
    names = [v.name for v in measured]
    colors = ["#4c72b0" if n == "speculative" else "#999999" for n in names]
    for ax, (key, label) in zip(axes, PANELS):
        values = [getattr(v.metrics, key) or 0.0 for v in measured]
        bars = ax.bar(names, values, color=colors)
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.tick_params(labelsize=8)
    speedup = f", {result.speedup.text()}" if result.speedup else ""
    fig.suptitle(f"{result.profile} ({result.verdict.value}{speedup})", fontsize=10)
    return save_figure(fig, path)

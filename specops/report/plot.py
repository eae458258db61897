"""A PNG comparing the variants: throughput and latency side by side."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and workers
import matplotlib.pyplot as plt  # noqa: E402

from specops.report.results import VariantResult  # noqa: E402

PANELS = [
    ("output_token_throughput_tok_s", "output tokens/s"),
    ("inter_token_latency_ms_p50", "inter-token latency p50 (ms)"),
    ("request_latency_ms_p50", "request latency p50 (ms)"),
]


def write_plot(path: Path, title: str, results: list[VariantResult]) -> Path:
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4 * len(PANELS), 3.2))
    names = [r.variant for r in results]
    colors = ["#4c72b0" if n == "speculative" else "#999999" for n in names]
    for ax, (key, label) in zip(axes, PANELS):
        values = [r.metrics.get(key) or 0.0 for r in results]
        bars = ax.bar(names, values, color=colors)
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.tick_params(labelsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

"""What every specops figure shares: pyplot on Agg, how a figure is written (atomically, then closed) and how an
acceptance-per-draft-position panel is labelled. The report, sweep, upgrade and regression plots each draw their own
on these, side by side."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and workers
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from specops.atomic_file import write_figure  # noqa: E402

__all__ = ["label_acceptance_axes", "plt", "save_figure"]


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

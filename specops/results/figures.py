"""The catalogue of a variant's figures: each read from a run, named and shown one way by every table, plot and
judgement (the report, the history's comparison, the upgrade check, a sweep's tables, the regression's metrics)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from specops.results.model import RunResult, VariantRecord

MISSING = "-"  # what a table shows for a figure not measured


@dataclass(frozen=True)
class Figure:
    """One figure of a variant: where it is read (`part` of the variant: metrics, acceptance or cost; its `attr`),
    its one label, its format and unit. A table whose cells carry no unit puts it in its `header`."""
    key: str
    part: str
    attr: str
    label: str
    fmt: str
    unit: str = ""

    def of(self, result: RunResult | None, variant: str) -> float | None:
        return figure(result, variant, self.part, self.attr)

    def on(self, record: VariantRecord | None) -> float | None:
        return read(record, self.part, self.attr)

    @property
    def header(self) -> str:
        return f"{self.label} {self.unit}".strip()

    def cell(self, value: float | None) -> str:
        """The value as a table under `header` shows it (no unit)."""
        return MISSING if value is None or math.isnan(value) else f"{value:{self.fmt}}"

    def text(self, value: float | None) -> str:
        """The value with its unit, as a line naming the figure shows it."""
        bare = self.cell(value)
        return f"{bare} {self.unit}" if self.unit and bare != MISSING else bare


FIGURES: dict[str, Figure] = {f.key: f for f in (
    Figure("tokens_per_s", "metrics", "output_token_throughput_tok_s", "tokens/s", ".2f"),
    Figure("accepted_per_step", "acceptance", "mean_accepted_per_step", "accepted/step", ".2f"),
    Figure("acceptance", "acceptance", "acceptance_rate", "acceptance", ".1%"),
    Figure("ttft_p50", "metrics", "time_to_first_token_ms_p50", "TTFT p50", ".1f", "ms"),
    Figure("itl_p50", "metrics", "inter_token_latency_ms_p50", "ITL p50", ".1f", "ms"),
    Figure("latency_p50", "metrics", "request_latency_ms_p50", "latency p50", ".0f", "ms"),
    Figure("latency_p99", "metrics", "request_latency_ms_p99", "latency p99", ".0f", "ms"),
    Figure("out_tokens", "metrics", "output_sequence_length_avg", "out tokens", ".1f"),
    Figure("requests", "metrics", "request_count", "requests", ".0f"),
    Figure("cpu_s_per_1k", "cost", "cpu_s_per_1k_tokens", "CPU s/1k tokens", ".1f"),
    Figure("gpu_j_per_1k", "cost", "gpu_j_per_1k_tokens", "GPU J/1k tokens", ".0f"),
)}


def figure(result: RunResult | None, variant: str, part: str, name: str) -> float | None:
    """`name` of the variant's `part` (metrics, acceptance or cost); None where the run, the variant or the part is
    missing, and for an acceptance its source could not give (unavailable)."""
    return read(result.variant(variant) if result is not None else None, part, name)


def read(record: VariantRecord | None, part: str, name: str) -> float | None:
    found = getattr(record, part) if record is not None else None
    return None if found is None or (part == "acceptance" and not found.available) else getattr(found, name)


def shown(value: float | None, spec: str = ".2f", unit: str = "") -> str:
    return MISSING if value is None else f"{value:{spec}}{unit}"


def interval_text(point: float | None, low: float | None, high: float | None, spec: str = ".2f",
                  unit: str = "x") -> str:
    """`1.23x (1.10-1.37)`: the point, and its interval where it has one."""
    if point is None:
        return MISSING
    spread = f" ({low:{spec}}-{high:{spec}})" if low is not None and high is not None else ""
    return f"{point:{spec}}{unit}{spread}"

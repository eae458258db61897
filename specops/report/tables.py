"""comparison.csv and report.md from the variant results."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from specops.lossless import LosslessResult
from specops.report.results import VariantResult, analytical_bound

# (column in the genai-perf metrics, header in report.md, format)
SUMMARY_COLUMNS = [
    ("output_token_throughput_tok_s", "tokens/s", "{:.2f}"),
    ("time_to_first_token_ms_p50", "TTFT p50 ms", "{:.1f}"),
    ("inter_token_latency_ms_p50", "ITL p50 ms", "{:.1f}"),
    ("request_latency_ms_p50", "latency p50 ms", "{:.0f}"),
    ("request_latency_ms_p99", "latency p99 ms", "{:.0f}"),
    ("output_sequence_length_avg", "out tokens", "{:.1f}"),
    ("request_count", "requests", "{:.0f}"),
]
THROUGHPUT = "output_token_throughput_tok_s"


def speedup(results: list[VariantResult]) -> float | None:
    by_variant = {r.variant: r for r in results}
    spec, base = by_variant.get("speculative"), by_variant.get("base")
    if not spec or not base or not base.metrics.get(THROUGHPUT):
        return None
    return spec.metrics[THROUGHPUT] / base.metrics[THROUGHPUT]


def bound(results: list[VariantResult]) -> float | None:
    by_variant = {r.variant: r for r in results}
    spec, base = by_variant.get("speculative"), by_variant.get("base")
    return analytical_bound(spec.acceptance if spec else None, base.acceptance if base else None)


def comparison_frame(results: list[VariantResult], lossless: LosslessResult | None) -> pd.DataFrame:
    frame = pd.DataFrame([r.row() for r in results])
    ratio = speedup(results)
    frame["speedup_vs_base"] = [ratio if r.variant == "speculative" else (1.0 if ratio else None) for r in results]
    limit = bound(results)
    frame["speedup_bound"] = [limit if r.variant == "speculative" else None for r in results]
    frame["valid"] = [verdict(lossless)[0]] * len(results)
    return frame


def verdict(lossless: LosslessResult | None) -> tuple[str, list[str]]:
    if lossless is None:
        return "UNCHECKED", ["the lossless check did not run (comparison.baseline is false or no prompts)"]
    if lossless.valid:
        return "VALID", [f"{lossless.compared} prompts identical at temperature 0"]
    reasons = list(lossless.reasons)
    if lossless.first is not None:
        d = lossless.first
        reasons.append(
            f"{lossless.mismatches}/{lossless.compared} prompts differ; first at prompt {d.prompt_index}, "
            f"character {d.position}: base {d.base!r} vs speculative {d.speculative!r}"
        )
    return "INVALID", reasons


def _fmt(value, pattern: str) -> str:
    return "-" if value is None or pd.isna(value) else pattern.format(value)


def markdown_table(results: list[VariantResult]) -> str:
    ratio = speedup(results)
    headers = ["variant", "method"] + [h for _, h, _ in SUMMARY_COLUMNS] + ["speedup", "acceptance", "accepted/step"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for r in results:
        acc = r.acceptance
        cells = [r.variant, r.method] + [_fmt(r.metrics.get(k), f) for k, _, f in SUMMARY_COLUMNS]
        cells.append(_fmt(ratio if r.variant == "speculative" else (1.0 if ratio else None), "{:.2f}x"))
        cells.append(_fmt(acc.acceptance_rate if acc else None, "{:.1%}"))
        cells.append(_fmt(acc.mean_accepted_per_step if acc else None, "{:.2f}"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report_markdown(title: str, results: list[VariantResult], lossless: LosslessResult | None, notes: list[str]) -> str:
    status, reasons = verdict(lossless)
    ratio = speedup(results)
    parts = [
        f"# {title}",
        "",
        f"**{status}**" + (f" · speedup vs base: **{ratio:.2f}x** (output tokens/s, genai-perf)" if ratio else "")
        + (f" · analytical bound {bound(results):.2f}x (measured acceptance and engine step costs; "
           f"{ratio / bound(results):.0%} of it reached)" if ratio and bound(results) else ""),
        "",
        *[f"- {r}" for r in reasons],
        "",
        markdown_table(results),
        "",
    ]
    acc_sources = sorted({r.acceptance.source for r in results
                          if r.acceptance and r.acceptance.available and r.method != "none"})
    if acc_sources:
        parts += [f"Acceptance from {', '.join(acc_sources)}: acceptance = accepted / drafted tokens; "
                  "accepted/step = 1 + accepted tokens per verification step.", ""]
    missing = sorted({r.acceptance.source for r in results if r.acceptance and not r.acceptance.available})
    if missing:
        parts += [*missing, ""]
    parts += [f"- {n}" for n in notes]
    return "\n".join(parts).rstrip() + "\n"


def write_tables(run_path: Path, title: str, results: list[VariantResult], lossless: LosslessResult | None,
                 notes: list[str]) -> tuple[Path, Path, str]:
    csv_path = run_path / "comparison.csv"
    comparison_frame(results, lossless).to_csv(csv_path, index=False)
    md = report_markdown(title, results, lossless, notes)
    md_path = run_path / "report.md"
    md_path.write_text(md)
    return csv_path, md_path, md

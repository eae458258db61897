"""comparison.csv and report.md, rendered from the RunResult alone."""
from __future__ import annotations

import pandas as pd

from specops.report.categories import category_csv_rows, category_lines
from specops.report.costs import wall_text
from specops.results.figures import FIGURES, MISSING, interval_text
from specops.results.model import BenchmarkRecord, RunResult, VariantRecord
from specops.results.paired import LEVEL, Design, Speedup

# What a reader acts on first: the variant's rate and how much of its drafting pays, then latency, then the counts
# and the cost (results/figures.py FIGURES: each figure's label, format and unit).
SUMMARY_COLUMNS = [FIGURES[key] for key in ("tokens_per_s", "accepted_per_step", "acceptance", "ttft_p50", "itl_p50",
                                            "latency_p50", "latency_p99", "out_tokens", "requests", "cpu_s_per_1k",
                                            "gpu_j_per_1k")]
ACCEPTED = FIGURES["accepted_per_step"]
SPEEDUP = f"speedup ({LEVEL:.0%})"


def variant_row(result: RunResult, v: VariantRecord) -> dict:
    row: dict = {"variant": v.name, "method": v.method, "model": v.model}
    row |= v.metrics.model_dump() if v.metrics else {}
    acc = v.acceptance
    live = acc if acc is not None and acc.available else None
    # The same columns on every row (None where not measured), so runs concatenate.
    row |= {"acceptance_source": acc.source if acc is not None else None,
            "num_drafts": live and live.num_drafts, "num_draft_tokens": live and live.num_draft_tokens,
            "num_accepted_tokens": live and live.num_accepted_tokens,
            "acceptance_rate": live and live.acceptance_rate,
            "mean_accepted_per_step": live and live.mean_accepted_per_step,
            "tokens_per_step": live and live.tokens_per_step, "engine_step_s": live and live.step_seconds,
            "draft_s_per_step": live and live.draft_seconds_per_step,
            "accepted_per_position": " ".join(f"{r:.3f}" for r in live.position_rates or []) if live else None,
            "predicted_accepted_per_step": result.predicted.accepted_per_step
            if result.predicted and v.name == "speculative" else None}
    guess = result.predicted.speedup if result.predicted and v.name == "speculative" else None
    row |= {"predicted_speedup": guess and guess.point, "predicted_speedup_low": guess and guess.low,
            "predicted_speedup_high": guess and guess.high}
    row |= {"cpu_s_per_1k_tokens": v.cost and v.cost.cpu_s_per_1k_tokens,
            "gpu_j_per_1k_tokens": v.cost and v.cost.gpu_j_per_1k_tokens}
    s = result.speedup
    spec = v.name == "speculative"
    row |= {"speedup_vs_base": (s.point if spec else 1.0) if s else None,
            "speedup_low": s.low if s and spec else None, "speedup_high": s.high if s and spec else None,
            "speedup_bound": result.bound if spec else None, "rounds": result.benchmark.rounds,
            "valid": result.verdict.value, "status": result.status.value}
    return row


def comparison_frame(result: RunResult) -> pd.DataFrame:
    rows = [variant_row(result, v) for v in result.variants] + category_csv_rows(result)
    if not rows:  # a run that failed before measuring still gets a row saying so
        rows = [{"variant": None, "valid": result.verdict.value, "status": result.status.value}]
    return pd.DataFrame(rows)


def _speedup_cell(result: RunResult, v: VariantRecord) -> str:
    s = result.speedup
    if s is None:
        return "-"
    if v.name != "speculative":
        return "1.00x (the base)"
    return interval_text(s.point, s.low, s.high) + ("" if s.has_interval else " (no interval)")


def summary_rows(result: RunResult) -> list[dict[str, str]]:
    """Each variant as people read it: the speedup with its interval first, then SUMMARY_COLUMNS, formatted; a
    column no variant has a figure for is left out (the full record is comparison.csv)."""
    rows = [{"variant": v.name, "method": v.method, SPEEDUP: _speedup_cell(result, v),
             **{f.header: f.cell(f.on(v)) for f in SUMMARY_COLUMNS}} for v in result.variants]
    shown = [f.header for f in SUMMARY_COLUMNS if any(row[f.header] != MISSING for row in rows)]
    return [{k: row[k] for k in ("variant", "method", SPEEDUP, *shown)} for row in rows]


def markdown_table(result: RunResult) -> str:
    rows = summary_rows(result)
    headers = list(rows[0])
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(row.values()) + " |" for row in rows])


def table_artifact(result: RunResult) -> list[dict[str, str]]:
    """The comparison table artifact: the report's rows, and the run's verdict and status (none measured: a row
    saying so)."""
    rows = summary_rows(result) if result.variants else [{"variant": "-"}]
    return [{**row, "verdict": result.verdict.value, "status": result.status.value} for row in rows]


def headline(result: RunResult) -> str:
    parts = [f"**{result.verdict.value}**"]
    s = result.speedup
    if s is not None:
        mix = result.workload.mix_text() if result.workload else ""
        parts.append(f"speedup vs base: **{s.text()}** (paired output tokens/s, {result.benchmark.tool}"
                     + (f"; {mix}" if mix else "") + ")")
    bound = result.bound
    if s is not None and bound:
        parts.append(f"analytical bound {bound:.2f}x (measured acceptance and engine step costs; "
                     f"{s.point / bound:.0%} of it reached)")
    return " · ".join(parts)


def cache_lines(result: RunResult) -> list[str]:
    """The drafter's cross-request cache policy, flagged where the run primed it with the measured prompts."""
    c = result.drafter_cache
    if c is None:
        return []
    policy = f"on, up to {c.max_cached_requests} requests" if c.on else "off"
    if not c.primed:
        return [f"- drafter cache {policy}: no measured prompt's output was cached before it was measured"]
    return [f"- **drafter cache primed** ({policy}): drafts could replay the measured prompts' own earlier outputs, "
            "a speedup no user sees: " + "; ".join(c.primed)]


def spread_text(result: RunResult) -> str | None:
    """Each prompt's speedup in one line (a prompt the drafter predicts well, e.g. one that loops, shows as the
    maximum), or why there is none; None without a speedup."""
    s = result.speedup
    if s is None:
        return None
    if s.per_prompt is None:
        return f"no per-prompt spread: not in the run's record (schema {result.schema_version}; kept since 6)"
    if s.per_prompt.prompts < 2:
        return "no per-prompt spread: one prompt was measured on both variants"
    return f"speedup per prompt (its base over speculative seconds per output token): {s.per_prompt.text()}"


def failure_lines(result: RunResult) -> list[str]:
    f = result.failure
    if f is None:
        return []
    where = f.step + (f" ({f.variant})" if f.variant else "")
    lines = [f"The run {result.verdict.value} at **{where}**:", "", "```text", f.error, "```", "", "Logs:"]
    return lines + [f"- {path}" for path in f.logs] + [""]


def cost_lines(result: RunResult) -> list[str]:
    costs = {v.name: v.cost for v in result.variants if v.cost is not None}
    if not costs:
        return []
    spec, base = costs.get("speculative"), costs.get("base")
    lines = []
    if spec and base and spec.cpu_s_per_1k_tokens and base.cpu_s_per_1k_tokens:
        lines.append(f"Cost: {spec.cpu_s_per_1k_tokens:.1f} CPU-seconds per 1,000 output tokens speculative vs "
                     f"{base.cpu_s_per_1k_tokens:.1f} base ({spec.cpu_s_per_1k_tokens / base.cpu_s_per_1k_tokens:.2f}x)"
                     f", {spec.cpu_source}.")
    if spec and base and spec.gpu_j_per_1k_tokens and base.gpu_j_per_1k_tokens:
        lines.append(f"GPU energy: {spec.gpu_j_per_1k_tokens:.0f} J per 1,000 output tokens speculative vs "
                     f"{base.gpu_j_per_1k_tokens:.0f} base, {spec.gpu_source}.")
    elif any(c.gpu_source for c in costs.values()):
        lines.append(f"GPU energy: not measured ({next(c.gpu_source for c in costs.values() if c.gpu_source)}).")
    return lines + [""] if lines else []


def acceptance_lines(result: RunResult) -> list[str]:
    found = [v.acceptance for v in result.variants if v.acceptance is not None]
    sources = sorted({a.source for a in found if a.available and a.num_drafts})
    lines = []
    if sources:
        lines.append(f"Acceptance from {', '.join(sources)}: {FIGURES['acceptance'].label} = accepted / drafted "
                     f"tokens; {ACCEPTED.label} = 1 + accepted tokens per verification step.")
    for a in found:
        if a.available and a.position_rates:
            rates = ", ".join(f"{r:.0%}" for r in a.position_rates)
            lines.append(f"Accepted at draft position 1..{len(a.position_rates)}: {rates}.")
    lines += sorted({a.source for a in found if not a.available})
    lines += prediction_lines(result)
    return lines + [""] if lines else []


def prediction_lines(result: RunResult) -> list[str]:
    """The replay's accepted/step for the run's setting beside the engine's count: a gap says the served engine
    drafted differently from what its drafter alone predicts (batching, a primed cache, or a changed engine)."""
    p = result.predicted
    if p is None:
        return []
    measured = ACCEPTED.of(result, "speculative")
    said = "not counted" if measured is None else ACCEPTED.cell(measured)
    both = measured is not None and p.accepted_per_step is not None
    gap = f" (measured - predicted {measured - p.accepted_per_step:+.2f})" if both else ""
    predicted = "no step drafted" if p.accepted_per_step is None else ACCEPTED.cell(p.accepted_per_step)
    lines = [f"{ACCEPTED.label.capitalize()} predicted {predicted}, measured {said}{gap}: {p.setting}, by {p.source} "
             f"(tokens/step with undrafted steps {p.tokens_per_step:.2f})."]
    if p.speedup is not None:
        s = result.speedup
        lines.append(f"Speedup predicted {p.speedup.text()}, measured "
                     f"{s.text() if s else 'none'}: the replay's steps weighed by the step cost {p.cost}.")
    elif p.cost:
        lines.append(f"Speedup not predicted: {p.cost}.")
    return lines


def design_text(b: BenchmarkRecord) -> str:
    """How the variants were paired, and why not request by request when they were not."""
    if b.design is Design.REQUESTS:
        return "requests interleaved between the variants (each prompt on both, back to back)"
    order = "alternating A B A B" if b.interleave and b.rounds > 1 else "one variant's, then the other's"
    return f"round blocks, {order}" + (f" (not requests interleaved: {b.design_note})" if b.design_note else "")


def interval_detail(s: Speedup) -> str:
    """The speedup interval's unit and method, or why there is none and how to get one (the headline says why in
    one clause)."""
    if s.has_interval:
        return f"speedup: {s.level:.0%} interval over {s.resampled}"
    return f"speedup: no {s.level:.0%} interval: {s.resampled.removeprefix('none:').strip()}"


def notes(result: RunResult) -> list[str]:
    b = result.benchmark
    out = [f"{b.tool} {b.tool_version or ''} over {b.api}: {b.num_requests} requests (+{b.warmup_requests} warm-up) x "
           f"{b.rounds} round(s), {design_text(b)}, {b.output_tokens} output tokens, concurrency {b.concurrency}, "
           f"prompts: {result.workload.label if result.workload else b.prompts}"
           + (f", sent as {result.workload.api} ({result.workload.api_note})" if result.workload else ""),
           *([interval_detail(result.speedup)] if result.speedup else []),
           f"served by {result.served.framework or result.served.backend}"
           + (f" in {result.served.image}" if result.served.image else "")
           + "".join(f"; {tool} {version}" for tool, version in result.served.servers.items()),
           wall_text(result)]
    if result.cached_steps:
        out.append("cached: " + ", ".join(f"{k} {'hit' if hit else 'miss'}" for k, hit in result.cached_steps.items()))
    return out + list(b.notes) + list(result.notes)


def report_markdown(result: RunResult) -> str:
    spread = spread_text(result)
    calibrated = [f"_{result.calibration}_", ""] if result.calibration else []
    parts = [f"# {result.profile} - {result.run_id}", "", headline(result), "", *calibrated,
             *([spread, ""] if spread else []),
             *failure_lines(result), *cache_lines(result),
             *[f"- {r}" for r in result.reasons], ""]
    if result.variants:
        parts += [markdown_table(result), ""]
    parts += category_lines(result)
    parts += acceptance_lines(result) + cost_lines(result)
    parts += [f"- {n}" for n in notes(result)]
    return "\n".join(parts).rstrip() + "\n"

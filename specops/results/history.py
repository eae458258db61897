"""Runs as text for a terminal: `specops history` (a table of runs) and `specops compare` (two side by side).

Everything here reads RunResults only, and every field may be missing: a failed run has no
variants, no speedup and no lossless check, and older records may lack what newer ones carry.
"""
from __future__ import annotations

import textwrap
from collections.abc import Callable
from datetime import UTC, datetime

from specops.results.calibration import covers_one, is_calibration
from specops.results.figures import FIGURES, MISSING, shown
from specops.results.model import BenchmarkRecord, RunResult
from specops.results.paired import LEVEL, Design

WIDTH = 100  # the terminal format_compare fits


def when(timestamp: float | None) -> str:
    """UTC to the minute: runs are compared across hosts in different time zones."""
    if timestamp is None:
        return MISSING
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M")


def _status(result: RunResult) -> str:
    text = result.status.value.upper()
    return f"{text} ({result.failure.step})" if result.failure else text


def _acceptance_rate(result: RunResult) -> str:
    return FIGURES["acceptance"].cell(FIGURES["acceptance"].of(result, "speculative"))


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell under a dashed rule, for a terminal or a log."""
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows)]
    lines = [headers, ["-" * width for width in widths], *rows]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)


MAX_NAMED_RUNS = 6  # per CPU model in the warning; the rest are counted


def cpu_warning(runs: list[tuple[str, RunResult]]) -> str | None:
    """A warning when the measured runs set side by side (label, run) ran on different CPU models, naming each
    model and its runs: an engine on a CPU is bound by memory bandwidth, which differs ~2x between hosts."""
    models: dict[str, list[str]] = {}
    for label, run in runs:
        if run.speedup is not None or any(v.metrics for v in run.variants):  # a run that measured nothing is moot
            models.setdefault(run.host.cpu_model, []).append(label)
    if len(models) < 2:
        return None

    def named(labels: list[str]) -> str:
        more = len(labels) - MAX_NAMED_RUNS
        return ", ".join(labels[:MAX_NAMED_RUNS]) + (f" and {more} more" if more > 0 else "")

    where = "; ".join(f"{model} ({named(labels)})" for model, labels in models.items())
    return (f"! These runs ran on {len(models)} different CPU models: {where}. An engine's speed on a CPU is bound by "
            "its memory bandwidth, which differs up to 2x between hosts: compare tokens/s and speedups only between "
            "runs on one CPU model.")


def with_warning(warning: str | None, text: str) -> str:
    """`text` with the warning first, wrapped to the terminal, when there is one."""
    lines = textwrap.wrap(warning, WIDTH, break_on_hyphens=False, break_long_words=False) if warning else []
    return "\n".join([*lines, "", text]) if lines else text


def format_history(results: list[RunResult]) -> str:
    """One line per run, in the order given (the store gives newest first); A/A runs say whether their interval
    holds 1.00x, and a last line gives their coverage day by day. Runs on different CPU models are called out
    first."""
    if not results:
        return "no runs recorded"
    rate = FIGURES["tokens_per_s"]
    headers = ["when (UTC)", "run id", "profile", "status", "speedup", f"{rate.label} spec/base",
               FIGURES["acceptance"].label, "framework"]
    rows = []
    for result in results:
        spec, base = (rate.of(result, v) for v in ("speculative", "base"))
        tokens = MISSING if spec is None and base is None else f"{rate.cell(spec)}/{rate.cell(base)}"
        rows.append([
            when(result.started_at), result.run_id, result.profile, _status(result), _speedup(result), tokens,
            _acceptance_rate(result), result.served.framework or result.served.image or MISSING,
        ])
    return with_warning(cpu_warning([(r.run_id, r) for r in results]), text_table(headers, rows) + aa_coverage(results))


PRIMED = "drafter cache primed"


def primed(result: RunResult) -> bool:
    """The drafter's cross-request cache held the measured prompts' own outputs before they were measured: its
    speedup is a replay no user sees, kept out of headlines and regression baselines."""
    return bool(result.drafter_cache and result.drafter_cache.primed)


def headline_speedup(result: RunResult) -> str:
    """The speedup as a headline says it (the summary line, `history`, `compare`): a run whose drafter cache was
    primed with the measured prompts says that first, its figure only as what was measured (issue 51: it read as
    any other run's)."""
    s = result.speedup
    if s is None:
        return "n/a"
    if primed(result):
        return f"none to report: {PRIMED} (its drafts replayed the measured prompts' own outputs; measured {s.text()})"
    return s.text()


def _speedup(result: RunResult) -> str:
    s = result.speedup
    if s is None:
        return MISSING
    if primed(result) or not is_calibration(result) or s.low is None:
        return headline_speedup(result)
    return f"{s.text()} A/A {'holds' if covers_one(s) else 'MISSES'} 1.00x"


def aa_coverage(results: list[RunResult]) -> str:
    """The A/A runs' coverage of 1.00x per UTC day, oldest first ("" when none has an interval)."""
    days: dict[str, list[bool]] = {}
    for r in sorted(results, key=lambda r: r.started_at):
        if is_calibration(r) and not r.status.ended_early and r.speedup is not None and r.speedup.low is not None:
            days.setdefault(when(r.started_at)[:10], []).append(covers_one(r.speedup))
    if not days:
        return ""
    per_day = ", ".join(f"{day} {sum(held)}/{len(held)}" for day, held in days.items())
    return f"\n\nA/A coverage of 1.00x by {LEVEL:.0%} intervals, by day: {per_day}"


def _gpus(result: RunResult) -> str:
    host = result.host
    if not host.gpus:
        return "none"
    names: dict[str, int] = {}
    for gpu in host.gpus:
        label = gpu.name + (f" ({gpu.memory_gb:g} GB)" if gpu.memory_gb else "")
        names[label] = names.get(label, 0) + 1
    parts = [f"{count}x {name}" for name, count in names.items()]
    parts += [f"driver {host.driver}"] if host.driver else []
    parts += [f"CUDA {host.cuda}"] if host.cuda else []
    return ", ".join(parts)


def _software(result: RunResult) -> str:
    software = result.software
    commit = f" @ {software.git_commit[:10]}" if software.git_commit else ""
    return f"{software.specops}{commit}{' (dirty)' if software.git_dirty else ''}"


def _benchmark(result: RunResult) -> str:
    bench = result.benchmark
    tool = f"{bench.tool} {bench.tool_version}" if bench.tool_version else bench.tool
    return (f"{tool}, {bench.api}, {bench.prompts}: {bench.num_requests} requests (+{bench.warmup_requests} warmup)"
            f" x {bench.rounds} rounds, {_design(bench)}, {bench.output_tokens} tokens,"
            f" concurrency {bench.concurrency}")


def _design(bench: BenchmarkRecord) -> str:
    if bench.design is Design.REQUESTS:
        return "requests interleaved"
    return "round blocks, interleaved" if bench.interleave else "round blocks"


def _lossless(result: RunResult) -> str:
    check = result.lossless
    if check is None:
        return MISSING
    if check.valid:
        return f"{check.compared}/{check.compared} equal"
    text = f"{check.mismatches} of {check.compared} differ"
    if check.first:
        text += f" (prompt {check.first.prompt_index}, char {check.first.position})"
    return "; ".join([text, *check.reasons]) if check.reasons else text


def _failure(result: RunResult) -> str:
    failure = result.failure
    if failure is None:
        return MISSING
    return f"{failure.step}{f' ({failure.variant})' if failure.variant else ''}: {failure.error}"


Field = Callable[[RunResult], str]
RUN_FIELDS: list[tuple[str, Field]] = [
    ("profile", lambda r: r.profile),
    ("profile sha256", lambda r: r.profile_sha256[:12]),
    ("overrides", lambda r: ", ".join(r.overrides) or MISSING),
    ("status / verdict", lambda r: f"{r.status.value} / {r.verdict.value}"),
    ("failure", _failure),
    ("method / backend", lambda r: f"{r.method} / {r.backend}"),
    ("served image", lambda r: r.served.image or MISSING),
    ("framework", lambda r: r.served.framework or MISSING),
    ("servers", lambda r: ", ".join(f"{k} {v}" for k, v in r.served.servers.items()) or MISSING),
    ("host cpu", lambda r: f"{r.host.cpu_model}, {r.host.cores} cores, {r.host.memory_gb:g} GB"),
    ("host gpu", _gpus),
    ("specops", _software),
    ("benchmark", _benchmark),
    ("wall time", lambda r: shown(r.phases.wall_s, ".0f", " s")),
    ("speedup", lambda r: headline_speedup(r) if r.speedup else MISSING),
]


# The variants' figures the comparison shows, each under its catalogue label (results/figures.py FIGURES)
VARIANT_FIELDS = [FIGURES[key] for key in ("tokens_per_s", "ttft_p50", "itl_p50", "acceptance", "accepted_per_step",
                                           "cpu_s_per_1k", "gpu_j_per_1k")]


def _variant_names(a: RunResult, b: RunResult) -> list[str]:
    names = [v.name for v in (*a.variants, *b.variants)]
    ordered = [n for n in ("speculative", "base") if n in names] + names
    return list(dict.fromkeys(ordered))


def _pairs(a: RunResult, b: RunResult) -> list[tuple[str, str, str]]:
    """(label, value in a, value in b) for every line of the comparison."""
    pairs = [(label, field(a), field(b)) for label, field in RUN_FIELDS]
    for fig in VARIANT_FIELDS:
        for name in _variant_names(a, b):
            left, right = (fig.text(fig.of(r, name)) for r in (a, b))
            if left != MISSING or right != MISSING:  # base variants carry no acceptance: no empty lines
                pairs.append((f"{fig.label} {name}", left, right))
    pairs.append(("lossless", _lossless(a), _lossless(b)))
    return pairs


def _measured_thing(result: RunResult) -> tuple:
    """What a speedup is a measurement of: the resolved profile, the software that served and drove
    it, and the hardware. Two runs that differ here may differ in speed for real (a regression)."""
    host = result.host
    return (result.profile_sha256, result.software.git_commit, result.software.git_dirty, result.served,
            host.cpu_model, host.cores, sorted(g.name for g in host.gpus))


def disagreement(a: RunResult, b: RunResult) -> str | None:
    """A warning when two runs measured one thing (the same resolved profile, software and hardware)
    and their speedup intervals do not overlap: then at least one interval is narrower than the
    host's real noise, and neither figure should be trusted alone."""
    sa, sb = a.speedup, b.speedup
    if _measured_thing(a) != _measured_thing(b) or sa is None or sb is None:
        return None
    if None in (sa.low, sa.high, sb.low, sb.high) or (sa.high >= sb.low and sb.high >= sa.low):
        return None
    return (f"! A and B measured one thing ({a.profile}: same settings, software and hardware) and their "
            f"speedup intervals do not overlap: {sa.text()} against {sb.text()}. The intervals are "
            f"narrower than this host's noise (a busy host, or its speed drifting between the variants' "
            f"blocks); trust neither figure alone.")


def format_compare(a: RunResult, b: RunResult) -> str:
    """Two runs side by side, one line per field; `*` marks the fields whose values differ. Runs on different
    CPU models, or two measurements of one thing that disagree beyond their intervals, are called out first."""
    pairs = _pairs(a, b)
    label_w = max(len(label) for label, _, _ in pairs)
    value_w = (WIDTH - 2 - label_w - 6) // 2

    def line(mark: str, label: str, left: str, right: str) -> str:
        return f"{mark} {label.ljust(label_w)} | {left.ljust(value_w)} | {right}".rstrip()

    out = [line(" ", "run", f"A {a.run_id}", f"B {b.run_id}"),
           line(" ", "started (UTC)", when(a.started_at), when(b.started_at)),
           line(" ", "uid", a.uid, b.uid),
           "-" * min(WIDTH, 2 + label_w + 6 + 2 * value_w)]
    for label, left, right in pairs:
        lefts = textwrap.wrap(left, value_w) or [""]
        rights = textwrap.wrap(right, value_w) or [""]
        for i in range(max(len(lefts), len(rights))):
            out.append(line("*" if i == 0 and left != right else " ", label if i == 0 else "",
                            lefts[i] if i < len(lefts) else "", rights[i] if i < len(rights) else ""))
    warnings = [w for w in (cpu_warning([(f"A {a.run_id}", a), (f"B {b.run_id}", b)]), disagreement(a, b)) if w]
    return with_warning(" ".join(warnings) or None, "\n".join(out))  # the CPU first: it may explain the rest

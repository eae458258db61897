"""Plain-text tables of a sweep (K x concurrency) and of a comparison (several profiles, one target)."""
from __future__ import annotations

from specops.results.figures import MISSING, figure, interval_text, shown
from specops.results.history import PRIMED, primed, text_table
from specops.results.model import LEVEL, RunResult
from specops.sweep.analysis import Cell, Choice, Crossover, by_series
from specops.sweep.grid import setting_label
from specops.sweep.schedule import Recommendation, flow


def _cell_text(cell: Cell | None) -> str:
    if cell is None:
        return "not measured"
    speedup = interval_text(cell.speedup, cell.speedup_low, cell.speedup_high)
    if cell.status != "ok":
        return f"{cell.status.upper()} {speedup}"
    return f"{speedup} al {shown(cell.mean_acceptance_length)}"


def format_sweep(cells: list[Cell], crossovers: dict[str, Crossover], choices: dict[int, Choice],
                 recommendation: Recommendation, schedule: list[Cell] | None = None) -> str:
    """The series (K, or setting) x concurrency table (speedup with its interval, `al` = mean acceptance length;
    the served schedule as its last row), the crossover per series, the one chosen per concurrency with why, and
    the recommendation."""
    ks = list(dict.fromkeys([*by_series(cells), *crossovers]))
    cs = sorted({c.concurrency for c in cells} | set(choices))
    at = {(c.label, c.concurrency): c for c in cells}
    base = {c.concurrency: c.base_tok_s for c in cells if c.base_tok_s is not None}
    header = ["K \\ concurrency", *map(str, cs)]
    rows = [[k, *(_cell_text(at.get((k, c))) for c in cs)] for k in ks]
    if schedule:
        served = {c.concurrency: c for c in schedule}
        rows.append(["schedule", *(_cell_text(served.get(c)) for c in cs)])
    rows.append(["base tok/s", *(shown(base.get(c), ".1f") for c in cs)])
    lines = [f"Speedup over the base ({LEVEL:.0%} interval), al = mean acceptance length", text_table(header, rows), ""]
    lines.append("Crossover (concurrency where speculation stops paying, log2-interpolated):")
    for k in ks:
        cross = crossovers.get(k)
        note = f"  [{cross.note}]" if cross is not None and cross.note else ""
        lines.append(f"  {k}: {cross.text() if cross else 'no data'}{note}")
    what = ("Setting", "settings'") if any(c.setting for c in cells) else ("K", "Ks'")
    lines += ["", f"{what[0]} per concurrency (named only where its 95% interval is apart from the base's 1.00x and "
              f"the other {what[1]}):"]
    lines += [f"  concurrency {c}: " + (_choice_text(choices[c]) if c in choices else "not measured") for c in cs]
    lines += ["", *format_recommendation(recommendation)]
    return "\n".join(lines) + "\n"


def _choice_text(choice: Choice) -> str:
    named = setting_label(choice.k, choice.setting) if choice.k is not None else "base (do not speculate)"
    return f"{named}: {choice.why}"


def format_recommendation(r: Recommendation) -> list[str]:
    lines = [f"Recommendation for {r.profile} ({r.backend}{', ' + r.framework if r.framework else ''}):"]
    lines += [f"  concurrency {c}: --set {' --set '.join(o)}" for c, o in sorted(r.profile_overrides.items())]
    lines += [f"  concurrency {c}: base (speculation off)" for c in r.base]
    if r.backend_keys is not None:
        lines.append(f"  {r.backend} schedule: {flow(r.backend_keys)}")
        lines.append(f"    source: {r.backend_source}")
    lines += [f"  note: {n}" for n in r.notes]
    return lines


def format_compare(results: list[RunResult]) -> str:
    """Several profiles on one target, each against its own base, in one table."""
    header = ["profile", "method", f"speedup ({LEVEL:.0%})", "spec tok/s", "base tok/s", "accept len", "verdict"]
    rows = []
    for r in results:
        s = r.speedup
        rows.append([r.profile, r.method, interval_text(s.point, s.low, s.high) if s else MISSING,
                     *(shown(figure(r, v, "metrics", "output_token_throughput_tok_s"), ".1f")
                       for v in ("speculative", "base")),
                     shown(figure(r, "speculative", "acceptance", "mean_accepted_per_step")),
                     f"{r.verdict.value}, {PRIMED}" if primed(r) else r.verdict.value])
    targets = sorted({m.source for r in results for m in r.models if m.role == "target"})
    title = f"Comparison on {', '.join(targets) or 'the target'} (speedup against the base)"
    return "\n".join([title, text_table(header, rows)]) + "\n"

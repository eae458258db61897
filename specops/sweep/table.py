"""Tables of a sweep (K x concurrency: plain text, and Markdown for the UI) and of a comparison (several profiles,
one target)."""
from __future__ import annotations

from specops.results.figures import FIGURES, MISSING, interval_text
from specops.results.history import PRIMED, primed, text_table
from specops.results.model import RunResult
from specops.results.paired import LEVEL
from specops.sweep.analysis import Cell, Choice, Crossover, by_series
from specops.sweep.by_category import category_lines
from specops.sweep.grid import setting_label
from specops.sweep.schedule import Recommendation, flow

ACCEPTED, RATE = FIGURES["accepted_per_step"], FIGURES["tokens_per_s"]


def _cell_text(cell: Cell | None) -> str:
    """Its speedup with the interval, its accepted/step and its own base's tokens/s (each cell measures the
    base beside it, in its own minutes: a shared host's speed moves between them)."""
    if cell is None:
        return "not measured"
    speedup = interval_text(cell.speedup, cell.speedup_low, cell.speedup_high)
    if cell.status != "ok":
        return f"{cell.status.upper()} {speedup}, {_base(cell)}"
    return f"{speedup}{_predicted(cell)}, {_accepted(cell)}, {_base(cell)}"


def _accepted(cell: Cell) -> str:
    return f"{ACCEPTED.label} {ACCEPTED.cell(cell.mean_acceptance_length)}"


def _base(cell: Cell) -> str:
    return f"base {RATE.label} {RATE.cell(cell.base_tok_s)}"


def _predicted(cell: Cell) -> str:
    """The replay's prediction for the cell at its load's step cost, beside what it measured."""
    return "" if cell.predicted is None else f" (predicted {interval_text(*cell.predicted)})"


def _grid(cells: list[Cell], crossovers: dict[str, Crossover], choices: dict[int, Choice],
          schedule: list[Cell] | None) -> tuple[list[str], list[int], list[tuple[str, dict[int, Cell]]]]:
    """The series labels, the concurrencies, and the rows (label, concurrency -> cell): one per series, the served
    schedule last."""
    ks = list(dict.fromkeys([*by_series(cells), *crossovers]))
    cs = sorted({c.concurrency for c in cells} | set(choices))
    rows = [(k, {c.concurrency: c for c in cells if c.label == k}) for k in ks]
    if schedule:
        rows.append(("schedule", {c.concurrency: c for c in schedule}))
    return ks, cs, rows


def _sections(cells: list[Cell], ks: list[str], cs: list[int], crossovers: dict[str, Crossover],
              choices: dict[int, Choice], recommendation: Recommendation) -> list[tuple[str, list[str]]]:
    """What the grid says, as (title, lines; a line's leading spaces nest it): the crossover per series, the one
    chosen per concurrency with why, and the recommendation, every one of them by the intervals."""
    crossing = []
    for k in ks:
        cross = crossovers.get(k)
        note = f"  [{cross.note}]" if cross is not None and cross.note else ""
        crossing.append(f"{k}: {cross.text() if cross else 'no data'}{note}")
    what = ("Setting", "settings'") if any(c.setting for c in cells) else ("K", "Ks'")
    recommended = format_recommendation(recommendation)
    return [("Crossover (concurrency where speculation stops paying, log2-interpolated between the last concurrency "
             "whose interval lies above 1.00x and the next, whose interval lies below):", crossing),
            (f"{what[0]} per concurrency (named only where its 95% interval is apart from the base's 1.00x and the "
             f"other {what[1]}):",
             [f"concurrency {c}: " + (choice_text(choices[c]) if c in choices else "not measured") for c in cs]),
            (recommended[0], [line.removeprefix("  ") for line in recommended[1:]])]


def format_sweep(cells: list[Cell], crossovers: dict[str, Crossover], choices: dict[int, Choice],
                 recommendation: Recommendation, schedule: list[Cell] | None = None) -> str:
    """The series (K, or setting) x concurrency table (speedup with its interval, accepted/step, and the tokens/s of
    the base measured beside that cell; the served schedule as its last row), then what it says (_sections)."""
    ks, cs, rows = _grid(cells, crossovers, choices, schedule)
    table = text_table(["K \\ concurrency", *map(str, cs)],
                       [[k, *(_cell_text(at.get(c)) for c in cs)] for k, at in rows])
    lines = [f"Speedup over the base ({LEVEL:.0%} interval; predicted: the replay's, at this host's step cost), "
             f"{ACCEPTED.label}, and the {RATE.label} of the base measured beside that cell", table]
    for title, items in _sections(cells, ks, cs, crossovers, choices, recommendation):
        lines += ["", title, *(f"  {item}" for item in items)]
    return "\n".join(lines) + "\n"


def sweep_markdown(cells: list[Cell], crossovers: dict[str, Crossover], choices: dict[int, Choice],
                   recommendation: Recommendation, schedule: list[Cell] | None = None) -> str:
    """The same for the Prefect UI, which neither wraps a code block's lines nor a table's cells (a long line ran
    past the page's edge, "would tell" and all): the grid as two narrow Markdown tables, what it says as lists."""
    ks, cs, rows = _grid(cells, crossovers, choices, schedule)

    def table(title: str, text) -> list[str]:
        head = ["K \\ concurrency", *map(str, cs)]
        return [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                *("| " + " | ".join([k, *(text(at.get(c)) for c in cs)]) + " |" for k, at in rows), ""]

    def speedup(cell: Cell | None) -> str:
        return _cell_text(cell) if cell is None else (
            ("" if cell.status == "ok" else f"{cell.status.upper()} ")
            + interval_text(cell.speedup, cell.speedup_low, cell.speedup_high) + _predicted(cell))

    lines = [*table(f"Speedup over the base ({LEVEL:.0%} interval)", speedup),
             *table(f"{ACCEPTED.label.capitalize()} and the base's {RATE.label} measured beside each cell",
                    lambda cell: MISSING if cell is None else f"{_accepted(cell)}, {_base(cell)}")]
    for title, items in _sections(cells, ks, cs, crossovers, choices, recommendation):
        lines += [f"**{title}**", ""]
        lines += [f"{' ' * (len(item) - len(item.lstrip()))}- {item.lstrip()}" for item in items] + [""]
    by_category = category_lines(cells)
    if by_category:
        lines += [f"**{by_category[0]}**", "", *(f"- {line.strip()}" for line in by_category[1:]), ""]
    return "\n".join(lines)


def choice_text(choice: Choice) -> str:
    """One concurrency's line of the table: what it names and why."""
    if choice.k is not None:
        return f"{setting_label(choice.k, choice.setting)}: {choice.why}"
    return f"{'undecided' if choice.undecided else 'base (do not speculate)'}: {choice.why}"


def format_recommendation(r: Recommendation) -> list[str]:
    lines = [f"Recommendation for {r.profile} ({r.backend}{', ' + r.framework if r.framework else ''}):"]
    per_load = {c: f"--set {' --set '.join(o)}" for c, o in r.profile_overrides.items()}
    per_load |= {c: "base (speculation off)" for c in r.base}
    per_load |= {c: f"undecided, {why}" for c, why in r.undecided.items()}
    lines += [f"  concurrency {c}: {text}" for c, text in sorted(per_load.items())]
    if r.backend_keys is not None:
        lines.append(f"  {r.backend} schedule: {flow(r.backend_keys)}")
        lines.append(f"    source: {r.backend_source}")
    lines += [f"  note: {n}" for n in r.notes]
    return lines


def format_compare(results: list[RunResult]) -> str:
    """Several profiles on one target, each against its own base, in one table."""
    header = ["profile", "method", f"speedup ({LEVEL:.0%})", f"speculative {RATE.label}", f"base {RATE.label}",
              ACCEPTED.label, "verdict"]
    rows = []
    for r in results:
        s = r.speedup
        rows.append([r.profile, r.method, interval_text(s.point, s.low, s.high) if s else MISSING,
                     *(RATE.cell(RATE.of(r, v)) for v in ("speculative", "base")),
                     ACCEPTED.cell(ACCEPTED.of(r, "speculative")),
                     f"{r.verdict.value}, {PRIMED}" if primed(r) else r.verdict.value])
    targets = sorted({m.source for r in results for m in r.models if m.role == "target"})
    title = f"Comparison on {', '.join(targets) or 'the target'} (speedup against the base)"
    return "\n".join([title, text_table(header, rows)]) + "\n"

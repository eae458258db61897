"""The upgrade check's side-by-side table: which version facts differ, and what speedup, acceptance per
draft position, tokens/s and cost did between the two sides, with intervals where there are any.

A change is called only where both sides have an interval and the two intervals do not overlap: a drop
when the after side's interval lies wholly below the before side's, a rise when wholly above. Overlapping
intervals are "no change" (not proof of equality: the check then cannot tell the engines apart).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from specops.results.figures import FIGURES, MISSING, Figure, figure, interval_text
from specops.results.model import RunResult
from specops.results.paired import LEVEL
from specops.results.speedup import wilson
from specops.upgrade.sides import Side


class Change(StrEnum):
    NONE = "no change"  # the intervals overlap
    DROP = "dropped"
    RISE = "rose"
    UNKNOWN = "no interval"  # a side has no interval (or no value): nothing can be called


@dataclass(frozen=True)
class Estimate:
    point: float
    low: float | None = None
    high: float | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None


def change(before: Estimate | None, after: Estimate | None) -> Change:
    """DROP/RISE only when both intervals exist and do not overlap; the direction is the after side's."""
    if before is None or after is None or not before.has_interval or not after.has_interval:
        return Change.UNKNOWN
    if after.high < before.low:  # type: ignore[operator]
        return Change.DROP
    if after.low > before.high:  # type: ignore[operator]
        return Change.RISE
    return Change.NONE


# ---- version facts -------------------------------------------------------------------------------------

def version_facts(side: Side, result: RunResult | None) -> dict[str, str]:
    """What served the side: its backend, what the run recorded (framework, image, the servers' own
    versions) and what specops/versions/data pins for its config; name -> value, absent ones left out."""
    facts = {"backend": side.backend}
    if result is not None:
        served = result.served
        facts |= {"served by": served.framework, "image": served.image, "image digest": served.image_digest}
        facts |= {f"{tool} (server reports)": version for tool, version in served.servers.items()}
    facts |= {f"{framework} (versions data)": version for framework, version in side.pinned.items()}
    return {name: value for name, value in facts.items() if value is not None}


def split_facts(before: dict[str, str], after: dict[str, str]) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """(facts that differ as (name, before, after), facts the same on both), in first-seen order."""
    names = list(dict.fromkeys([*before, *after]))
    differ = [(n, before.get(n, MISSING), after.get(n, MISSING)) for n in names if before.get(n) != after.get(n)]
    same = {n: before[n] for n in names if before.get(n) == after.get(n)}
    return differ, same


# ---- measurements --------------------------------------------------------------------------------------

def speedup_estimate(result: RunResult | None) -> Estimate | None:
    s = result.speedup if result is not None else None
    return None if s is None else Estimate(s.point, s.low, s.high)


def position_estimates(result: RunResult | None) -> list[Estimate]:
    """Acceptance at each draft position, with a Wilson interval over verification steps."""
    drafts = figure(result, "speculative", "acceptance", "num_drafts")
    out = []
    for accepted in (figure(result, "speculative", "acceptance", "accepted_per_position") or []) if drafts else []:
        low, high = wilson(accepted, drafts) or (None, None)
        out.append(Estimate(accepted / drafts, low, high))
    return out


# ---- rendering -----------------------------------------------------------------------------------------

def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _estimate_text(e: Estimate | None, spec: str, unit: str = "") -> str:
    return MISSING if e is None else interval_text(e.point, e.low, e.high, spec, unit)


def _ratio_text(before: float | None, after: float | None) -> str:
    """after/before, for a figure measured without an interval."""
    if before is None or after is None or not before:
        return MISSING
    return f"x{after / before:.2f} (no interval)"


def _estimate_row(name: str, before: Estimate | None, after: Estimate | None, spec: str,
                  unit: str = "") -> list[str]:
    verdict = change(before, after)
    called = f"**{verdict.value}**" if verdict in (Change.DROP, Change.RISE) else verdict.value
    return [name, _estimate_text(before, spec, unit), _estimate_text(after, spec, unit), called]


def _plain_row(variant: str, fig: Figure, before: RunResult | None, after: RunResult | None) -> list[str]:
    b, a = fig.of(before, variant), fig.of(after, variant)
    if b is None and a is None:
        return []
    return [f"{variant} {fig.header}", fig.cell(b), fig.cell(a), _ratio_text(b, a)]


def _status(result: RunResult | None) -> str:
    if result is None:
        return "not run"
    if result.status.ended_early and result.failure is not None:
        return f"FAILED at {result.failure.step}"
    return result.verdict.value


# The figures measured without an interval, per variant (results/figures.py FIGURES)
PLAIN_ROWS = [("speculative", "accepted_per_step"), ("speculative", "tokens_per_s"), ("base", "tokens_per_s"),
              ("speculative", "cpu_s_per_1k"), ("base", "cpu_s_per_1k"), ("speculative", "gpu_j_per_1k"),
              ("base", "gpu_j_per_1k")]


def measurement_rows(before: RunResult | None, after: RunResult | None) -> list[list[str]]:
    rows = [_estimate_row(f"speedup vs base ({LEVEL:.0%})", speedup_estimate(before), speedup_estimate(after),
                          ".2f", "x")]
    b_pos, a_pos = position_estimates(before), position_estimates(after)
    for i in range(max(len(b_pos), len(a_pos))):
        rows.append(_estimate_row(f"acceptance, draft position {i + 1} ({LEVEL:.0%}, per step)",
                                  b_pos[i] if i < len(b_pos) else None, a_pos[i] if i < len(a_pos) else None,
                                  ".0%"))
    rows += [_plain_row(variant, FIGURES[key], before, after) for variant, key in PLAIN_ROWS]
    rows.append(["run", _status(before), _status(after), ""])
    return [row for row in rows if row]


def speedup_line(before: RunResult | None, after: RunResult | None) -> str:
    """One sentence: did the speedup change, by the non-overlap rule, and which way."""
    b, a = speedup_estimate(before), speedup_estimate(after)
    if b is None or a is None:
        missing = [label for label, e, r in (("before", b, before), ("after", a, after)) if e is None]
        return (f"Speedup: cannot compare, no speedup measured on the {' and '.join(missing)} side "
                f"({'; '.join(_status(r) for r in (before, after))}).")
    text_b, text_a = _estimate_text(b, ".2f", "x"), _estimate_text(a, ".2f", "x")
    verdict = change(b, a)
    if verdict is Change.UNKNOWN:
        reasons = {label: r.speedup.resampled for label, e, r in (("before", b, before), ("after", a, after))
                   if not e.has_interval}
        why = (f"both: {reasons['before']}" if len(set(reasons.values())) == 1 < len(reasons)
               else "; ".join(f"{label}: {reason}" for label, reason in reasons.items()))
        return f"Speedup: cannot tell, {text_b} before vs {text_a} after: no {LEVEL:.0%} interval ({why})."
    if verdict is Change.NONE:
        return (f"Speedup: no change. {text_b} before vs {text_a} after: the {LEVEL:.0%} intervals overlap, so "
                "this check cannot tell the two apart.")
    word = "DROPPED" if verdict is Change.DROP else "ROSE"
    return (f"Speedup {word}: {text_b} before, {text_a} after (x{a.point / b.point:.2f}); the {LEVEL:.0%} "
            "intervals do not overlap, a change.")


def _grid(rows: list[list[str]]) -> list[str]:
    header = ["", "before", "after", "change"]
    return ["| " + " | ".join(header) + " |", "|---|---|---|---|",
            *("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)]


def format_upgrade(profile: str, sides: list[Side], results: list[RunResult | None]) -> str:
    """The whole check as Markdown: the sides' settings, the version facts that differ, the measurements
    side by side, and the speedup verdict."""
    (before_side, after_side), (before, after) = sides, results
    differ, same = split_facts(version_facts(before_side, before), version_facts(after_side, after))
    fact_rows = [[f"**{name}**", b, a, "differs"] for name, b, a in differ]
    targets = sorted({m.source for r in results if r is not None for m in r.models if m.role == "target"})
    lines = [f"## Upgrade check: {profile}", "",
             f"One profile on two engines{' (target ' + ', '.join(targets) + ')' if targets else ''}, each "
             "against its own base.", "",
             f"- before: `{before_side.setting}`", f"- after: `{after_side.setting}`", "",
             *_grid(fact_rows + measurement_rows(before, after)), ""]
    if same:
        lines.append("Same on both sides: " + "; ".join(f"{name} {value}" for name, value in same.items()) + ".")
    if not differ:
        lines.append("No version fact differs between the sides.")
    lines += ["", speedup_line(before, after),
              "Acceptance intervals are binomial (Wilson) over verification steps; steps of one request are not "
              "independent, so they are narrower than the truth. Tokens/s and cost carry no interval."]
    return "\n".join(lines) + "\n"

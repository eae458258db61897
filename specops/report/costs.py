"""Where a run's wall time went, as a line that adds up: each timed step's share (every moment counted once:
servers started side by side are one span, the replay's prediction is a step of its own), the queue for the host's
slots as its own part, and what is left, the orchestration overhead, never below zero."""
from __future__ import annotations

from specops.results.model import RunResult
from specops.results.phases import QUEUE_STEP

OVERHEAD = "orchestration overhead"
# The order a run takes its steps in: how the parts are listed whatever order a stored record's keys came back in
# (manifest.json sorts them); a step not named here follows them, in its record's order.
STEP_ORDER = ("preflight", "download", "draft", "build", "render", QUEUE_STEP, "serve", "check", "benchmark",
              "predict", "report")


def wall_parts(result: RunResult) -> list[tuple[str, float]] | None:
    """(label, seconds) per timed step of the run, in the order they first ran; None for a record from before the
    parts were kept (schema < 9)."""
    parts = result.phases.parts_s
    if parts is None:
        return None
    slots = ", ".join(result.window.slots) if result.window and result.window.slots else ""
    ordered = sorted(parts.items(), key=lambda item: STEP_ORDER.index(item[0]) if item[0] in STEP_ORDER
                     else len(STEP_ORDER))
    return [((f"queued for {slots}" if slots else "queued") if name == QUEUE_STEP else name, seconds)
            for name, seconds in ordered]


def _shown(wall_s: float, parts: list[tuple[str, float]]) -> tuple[list[tuple[str, float]], float]:
    """The parts as printed (to 0.1 s; those that round to 0.0 s left out) and the overhead they leave of the wall
    as printed, never below zero: the printed figures add up."""
    shown = [(label, round(seconds, 1)) for label, seconds in parts if round(seconds, 1) > 0]
    return shown, max(0.0, round(round(wall_s, 1) - sum(seconds for _, seconds in shown), 1))


def adding_up(wall_s: float, parts: list[tuple[str, float]], overhead_note: str = "") -> str:
    """`405.2s = serve 170.1s + ... + orchestration overhead 5.0s`: the figures as printed add up to the wall as
    printed."""
    shown, rest = _shown(wall_s, parts)
    terms = [f"{label} {seconds:.1f}s" for label, seconds in shown] + [f"{OVERHEAD} {rest:.1f}s{overhead_note}"]
    return f"{wall_s:.1f}s = {' + '.join(terms)}"


def overhead_shown(result: RunResult) -> float:
    """The flow's orchestration overhead as its report's line prints it (the summary line says the same)."""
    parts = wall_parts(result)
    return result.overhead_s if parts is None else _shown(result.phases.wall_s, parts)[1]


def queued_s(result: RunResult) -> float:
    """What the run spent queued behind other runs for its slots, inside its own wall."""
    parts = result.phases.parts_s
    return result.waited_s if parts is None else parts.get(QUEUE_STEP, 0.0)


def wall_text(result: RunResult) -> str:
    """The report's line: the flow's wall and its parts."""
    parts = wall_parts(result)
    if parts is not None:
        return f"flow wall {adding_up(result.phases.wall_s, parts)}"
    ph = result.phases  # an older record: phases summed over variants, the overhead from the overlap-free total
    measured = ", ".join(f"{k} {v:.1f}s" for k, v in ph.phase_s.items())
    return (f"flow wall {ph.wall_s:.1f}s; {measured}; {OVERHEAD} {result.overhead_s:.1f}s"
            + (f"; queued {result.waited_s:.1f}s for {', '.join(result.window.slots)}" if result.waited_s >= 1 else ""))


def command_text(command: str, total_s: float, result: RunResult) -> str:
    """The CLI's last line: the command's whole wall (its Prefect API start, the flow, the report) and its parts,
    adding up as printed."""
    parts = wall_parts(result)
    if parts is None:  # not written by this specops: no parts to add up
        return f"{command}: {total_s:.1f}s ({OVERHEAD} {result.overhead_s:.1f}s of its flow)"
    return f"{command}: {adding_up(total_s, parts, OUTSIDE_STEPS)}"


# What the command's overhead is: everything outside the run's timed steps.
OUTSIDE_STEPS = " (Prefect's API start, validation, the report, and between the steps)"

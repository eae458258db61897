"""A run's timed steps as shares of its wall time that add up: every moment counted once.

Steps overlap: a group's servers start side by side (two `serve` spans at once), and a step may run inside
another (a draft step serving its synthesis server). Summing each step's spans counts such moments twice, and the
parts then add up to more than the wall. Here each moment goes to one step, the innermost running then (the one
started last): a moment inside two servers' starts is one second of `serve`; a moment of the synthesis server's
`serve` inside `draft` is `serve`'s. What no step covers is the run's own orchestration."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

Span = tuple[float, float]  # (start, end) on one clock


def wall_shares(spans: Mapping[str, Iterable[Span]], start: float, end: float) -> dict[str, float]:
    """Each step's share of [start, end] (steps in the order each first started): every moment inside some step's
    span to the innermost one, so the shares add up to the time covered by any step, never more."""
    clipped = sorted((max(s, start), min(e, end), name) for name, spans_of in spans.items() for s, e in spans_of
                     if min(e, end) > max(s, start))
    shares = {name: 0.0 for _, _, name in clipped}
    edges = sorted({t for s, e, _ in clipped for t in (s, e)})
    for a, b in zip(edges, edges[1:]):
        open_here = [(s, name) for s, e, name in clipped if s <= a and e >= b]
        if open_here:
            shares[max(open_here)[1]] += b - a
    return shares

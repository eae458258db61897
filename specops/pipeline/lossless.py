"""The lossless check: at temperature 0 the speculative server must say exactly what the base says."""
from __future__ import annotations

from specops.results.model import Divergence, Lossless


def _first_difference(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def compare_outputs(base: list[str], speculative: list[str], window: int = 40) -> Lossless:
    """Compare outputs prompt by prompt; record the first diverging prompt and position."""
    if len(base) != len(speculative):
        return Lossless(compared=0, mismatches=0,
                        reasons=[f"output counts differ: base {len(base)}, speculative {len(speculative)}"])
    first, mismatches = None, 0
    for index, (b, s) in enumerate(zip(base, speculative)):
        if b == s:
            continue
        mismatches += 1
        if first is None:
            pos = _first_difference(b, s)
            lo = max(0, pos - window // 2)
            first = Divergence(prompt_index=index, position=pos, base=b[lo : pos + window // 2],
                               speculative=s[lo : pos + window // 2])
    return Lossless(compared=len(base), mismatches=mismatches, first=first)

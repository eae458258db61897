"""The lossless check: at temperature 0 the speculative server must say exactly what the base says."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Divergence:
    prompt_index: int
    position: int  # first differing character of the output
    base: str  # a window of each output around the divergence
    speculative: str


@dataclass(frozen=True)
class LosslessResult:
    compared: int
    mismatches: int
    first: Divergence | None = None
    reasons: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.mismatches == 0 and not self.reasons

    def to_dict(self) -> dict:
        return asdict(self) | {"valid": self.valid}


def _first_difference(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def compare_outputs(base: list[str], speculative: list[str], window: int = 40) -> LosslessResult:
    """Compare outputs prompt by prompt; record the first diverging prompt and position."""
    if len(base) != len(speculative):
        return LosslessResult(0, 0, None, [f"output counts differ: base {len(base)}, speculative {len(speculative)}"])
    first, mismatches = None, 0
    for index, (b, s) in enumerate(zip(base, speculative)):
        if b == s:
            continue
        mismatches += 1
        if first is None:
            pos = _first_difference(b, s)
            lo = max(0, pos - window // 2)
            first = Divergence(index, pos, b[lo : pos + window // 2], s[lo : pos + window // 2])
    return LosslessResult(len(base), mismatches, first)

"""A/A calibration: a profile's base measured against itself, in the run's own design.

The run is the profile with its method replaced by `none`, so both arms serve the base model,
on the same backend, benchmark, rounds and interleaving as the profile's own runs. Its true
speedup is 1 by construction. Two things follow from a set of them:

- coverage: how many of the intervals contain 1.00x. At a 95% level about 19 of 20 should; far
  fewer means the interval ignores some of the host's noise (drift between the arms' blocks, or
  requests resampled as if independent), and the profile's speedups are less certain than printed;
- spread: how far a false speedup strays from 1 (1.4826 x the median |log speedup|, a robust
  standard deviation on the log scale). The regression rule widens a speedup's noise band to at
  least that much: a speedup that moves less than an A/A run does is not a change.

A/A runs are recorded like any run, under the profile's name with method `none`, and stay out of
the profile's baselines (specops/regression/verdict.py).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from specops.results.model import RunResult, Status
from specops.results.paired import LEVEL, Design, Speedup
from specops.results.role import CALIBRATE

# The override that turns a profile into its A/A run (the `none` method has no other field).
AA_OVERRIDE = 'method={"kind": "none"}'
MAD_SCALE = 1.4826  # MAD x this estimates the standard deviation of normally distributed noise
MIN_RUNS = 2  # one A/A run says nothing about coverage
# Each A/A run is a whole run of the profile: past this a calibration takes hours on a CPU profile, and
# its coverage is already read to about 2 points (binomial, 95% of 100).
MAX_RUNS = 100


def is_calibration(result: RunResult) -> bool:
    """An A/A run: both arms serve the base model."""
    return result.role.kind == CALIBRATE


def covers_one(speedup: Speedup) -> bool:
    return speedup.low is not None and speedup.high is not None and speedup.low <= 1.0 <= speedup.high


def aa_spread(speedups: list[float]) -> float:
    """1.4826 x the median |log s|: the A/A noise of a speedup on the log scale (true value 1)."""
    return MAD_SCALE * statistics.median(abs(math.log(s)) for s in speedups)


@dataclass(frozen=True)
class Calibration:
    profile: str
    results: list[RunResult]  # every A/A run of the calibration, failed ones included

    @property
    def measured(self) -> list[Speedup]:
        """The speedups with an interval (failed or unmeasured runs have none)."""
        return [r.speedup for r in self.results
                if not r.status.ended_early and r.speedup is not None and r.speedup.low is not None]

    @property
    def covering(self) -> int:
        return sum(covers_one(s) for s in self.measured)

    @property
    def spread(self) -> float | None:
        return aa_spread([s.point for s in self.measured]) if self.measured else None

    @property
    def half_width(self) -> float | None:
        """The median interval's half-width, relative: sqrt(high / low) - 1."""
        widths = [math.sqrt(s.high / s.low) - 1 for s in self.measured if s.low and s.high]
        return statistics.median(widths) if widths else None


def format_calibration(calibration: Calibration) -> str:
    """One line per A/A run, then the coverage and the spread."""
    lines = [f"A/A calibration of {calibration.profile}: its base against itself, {len(calibration.results)} runs "
             f"(true speedup 1.00x)", ""]
    for r in calibration.results:
        s = r.speedup
        if r.status.ended_early or s is None:
            lines.append(f"  {r.run_id}  {r.status.value.upper()}" + (f" ({r.failure.step})" if r.failure else ""))
        else:
            # INVALID: the base's outputs differed from themselves (a nondeterministic server); still timed
            covered = "no interval" if s.low is None else "contains 1.00x" if covers_one(s) else "MISSES 1.00x"
            lines.append(f"  {r.run_id}  {s.text()}  {covered}"
                         + ("  (INVALID: the two base servers answered differently)" if r.status is Status.INVALID
                            else ""))
    measured = calibration.measured
    lines.append("")
    if not measured:
        timed = [r.speedup for r in calibration.results if r.speedup is not None]
        why = f" ({timed[0].resampled})" if timed else ""
        lines.append(f"no run measured a speedup with an interval{why}: no coverage to count")
        return "\n".join(lines)
    expected = LEVEL * len(measured)
    lines.append(f"{calibration.covering} of {len(measured)} {LEVEL:.0%} intervals contain 1.00x "
                 f"(about {expected:.1f} expected)")
    points = sorted(s.point for s in measured)
    lines.append(f"false speedups {points[0]:.3f}x .. {points[-1]:.3f}x, median {statistics.median(points):.3f}x; "
                 f"A/A spread {calibration.spread:.3f} on the log scale (1.4826 x median |log s|, a factor of "
                 f"{math.exp(calibration.spread):.3f}); median interval half-width {calibration.half_width:.1%}")
    design = measured[0]
    rounds = f"{design.rounds} round{'s' * (design.rounds != 1)}"
    pairing = "requests interleaved" if design.design is Design.REQUESTS else "round blocks"
    lines.append(f"design: {design.prompts} prompts x {rounds}, {pairing}; interval over {design.resampled}")
    return "\n".join(lines)

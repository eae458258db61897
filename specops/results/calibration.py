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

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from specops.atomic_file import write_text
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
    ab: tuple[RunResult, ...] = ()  # the real comparison repeated back to back (A/B), failed ones included

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


def measured_ab(calibration: Calibration) -> list[Speedup]:
    return [r.speedup for r in calibration.ab
            if not r.status.ended_early and r.speedup is not None and r.speedup.low is not None]


def ab_lines(calibration: Calibration) -> list[str]:
    """The A/B repeats against each other: does each run's interval hold the others' typical speedup (their median)?
    Between-run spread beside within-run: the SD of log speedups over runs, and each run's own standard error
    (its interval's half-width on the log scale over its t quantile, whose width the runs' prompts set)."""
    measured = measured_ab(calibration)
    if len(measured) < 2:
        return [] if not calibration.ab else [f"A/B: {len(measured)} of {len(calibration.ab)} runs measured an "
                                              "interval: nothing to hold against each other"]
    median = statistics.median(s.point for s in measured)
    holding = sum(s.low <= median <= s.high for s in measured)  # type: ignore[operator]
    overlaps = sum(a.low <= b.high and b.low <= a.high for i, a in enumerate(measured)  # type: ignore[operator]
                   for b in measured[i + 1:])
    pairs = len(measured) * (len(measured) - 1) // 2
    between = statistics.stdev(math.log(s.point) for s in measured)
    within = statistics.mean((math.log(s.high) - math.log(s.low)) / 2 / 1.96 for s in measured)  # type: ignore
    return ["", f"A/B: the profile itself, {len(calibration.ab)} runs back to back:",
            *[f"  {r.run_id}  {r.speedup.text() if r.speedup else r.status.value.upper()}" for r in calibration.ab],
            f"{holding} of {len(measured)} intervals contain the runs' median speedup {median:.3f}x; "
            f"{overlaps} of {pairs} pairs of intervals overlap",
            f"between runs: SD {between:.3f} of log speedup; within a run: mean standard error {within:.3f} "
            f"(ratio {between / within:.2f}: above ~1.3 the runs move more than their intervals say)"]


def host_summary(calibration: Calibration, when: str) -> str:
    """What every later run of the profile on this host says of its design's calibration."""
    aa = f"A/A {calibration.covering}/{len(calibration.measured)} intervals contain 1.00x"
    ab = measured_ab(calibration)
    if len(ab) >= 2:
        median = statistics.median(s.point for s in ab)
        aa += f", A/B {sum(s.low <= median <= s.high for s in ab)}/{len(ab)} hold the runs' median"  # type: ignore
    return f"calibrated on this host: {aa}, on {when}"


def format_calibration(calibration: Calibration) -> str:
    """One line per A/A run, then the coverage and the spread."""
    hosts = sorted({f"{r.host.cpu_model} ({r.host.cores} cores)" for r in [*calibration.results, *calibration.ab]})
    lines = [f"A/A calibration of {calibration.profile}: its base against itself, {len(calibration.results)} runs "
             f"(true speedup 1.00x), on {', '.join(hosts) or 'no host'}", ""]
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
    return "\n".join(lines + ab_lines(calibration))


def calibration_file(cache_dir: Path, profile: str) -> Path:
    """Where a host keeps its latest calibration of a profile (the cache is the host's own)."""
    return Path(cache_dir) / "calibrations" / f"{profile}.json"


def save_host_calibration(cache_dir: Path, profile: str, summary: str, cpu_model: str, where: str) -> Path:
    return write_text(calibration_file(cache_dir, profile), json.dumps(
        {"summary": summary, "cpu_model": cpu_model, "report": where}, indent=1) + "\n")


def host_calibration(cache_dir: Path, profile: str, cpu_model: str) -> str:
    """This host's latest calibration of the profile in one line, or that there is none (or none for this CPU)."""
    path = calibration_file(cache_dir, profile)
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"not calibrated here (`specops calibrate {profile}` measures how far its intervals hold)"
    if kept.get("cpu_model") != cpu_model:
        return f"not calibrated on this CPU ({cpu_model}; the last calibration ran on {kept.get('cpu_model')})"
    return f"{kept['summary']} ({kept['report']})"


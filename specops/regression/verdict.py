"""The regression rule: each run of a profile against its own baseline, and a verdict for the newest.

A run's baseline for a metric is the median of the last `baseline_runs` earlier runs of the same
profile on the same hardware and benchmark shape (`baseline_key`), started within `window_days`
before it, with status ok, a passed lossless check and that metric. A run *violates* a metric when it is worse
than baseline x threshold (below it for higher-is-better metrics, above it for lower-is-better
ones) and also outside the noise band: a metric that wobbles by 8% night to night must not alert
at a 5% threshold. Every metric here is a speed or a rate, whose noise is a ratio, so the
baseline and band are taken on the log scale: the median of the runs' logarithms +- noise_mads x
1.4826 x their MAD, back on the linear scale: a factor around the baseline that never reaches zero, which a
linear band did (-4.6..27.9 tokens/s from two runs judged a 53% drop "ok"). A per-position acceptance rate's
band is at least the 95% Wilson interval of its baseline runs' pooled counts (metrics.counting_band): a zero
baseline's band is then not zero-width. The verdict for the newest run, per metric (after PyTorch HUD's practice):

- `regression`: it and the previous run of that profile and `baseline_key` with the metric both violate,
  each against its own baseline (`violating_uids` is the whole streak, oldest first). The runs of a
  violating streak stay out of the baselines of the runs after them, so a level that drops and stays
  down is a regression until runs are back in the band (or the window ages the old level out),
  not a new normal after a few nights;
- `suspicious`: only the newest violates (one bad night is often noise or a busy host);
- `improved`: better than baseline / threshold (the mirror rule) and outside the band;
- `insufficient-data`: fewer than `min_baseline_runs` baseline runs (`runs_needed` says how many more);
- `host-drift`: an absolute-speed metric (tokens/s, ITL) not judged, because the same run's base
  arm moved past the metric's threshold against its baseline runs' base arms: the host's speed
  changed, and that says nothing about speculation (`note` gives the factor);
- `ok` otherwise.

A/A runs (specops/results/calibration.py: the profile's base against itself) are never judged and
never a baseline. Once `min_baseline_runs` of them precede a run on its `baseline_key` within the
window, its speedup band is at least noise_mads x their spread wide: a speedup that moves less than
a false one strays is not a change, however steady the baseline runs happened to be.

Two kinds of run have no performance to judge:

- A run whose lossless check failed (status invalid, or a failed `lossless`) gives one verdict,
  metric `lossless` = `regression` at once: its speculative outputs differ from the base's, which
  is a correctness bug, never noise, so nothing waits for a second run; its speed is not that of
  the same computation, so no metric verdicts, and it never enters a baseline.
- A run that failed (a step raised) gives one verdict, metric `run`: `suspicious` the first time,
  `regression` when the previous run of that `baseline_key` failed too. A failure measured nothing, so
  it is not a performance regression; most failures are the environment (a GPU host rebooting, a
  registry timing out) and pass, but a profile failing night after night has stopped being watched,
  which is worth the same alert. Failed runs are skipped by the metrics' streaks and baselines.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum
from itertools import takewhile

from pydantic import BaseModel, ConfigDict

from specops.regression.drift import host_drift
from specops.regression.metrics import SPEEDUP, counting_band, metric, metric_values, order_key, position
from specops.regression.policy import RegressionPolicy
from specops.regression.runs import baseline_key, chronological, judged, lossless_failed, never_judged
from specops.results.calibration import MAD_SCALE, aa_spread, is_calibration
from specops.results.model import RunResult, Status

HISTORY_LIMIT = 500  # runs of one profile read to judge or draw it: far more than a baseline window holds
LOSSLESS = "lossless"
RUN = "run"
# Values at or below this count as this on the log scale: an acceptance rate can be 0, which has no
# logarithm (every tracked metric's meaningful values are far above it).
LOG_FLOOR = 1e-3
# What set a point's band, as the trend's legend names it: the runs' own spread, the A/A runs' (wider), or the
# counting noise of a per-position rate (metrics.counting_band), which a zero baseline needs.
NOISE_BAND, AA_BAND, COUNT_BAND = "noise band", "A/A-widened band", "counting band (Wilson 95%)"
# A band of no width: every baseline run measured the same value (greedy n-gram acceptance repeats exactly), so the
# threshold alone decides.
EXACT_BAND = "no noise band (baseline runs identical: the threshold alone decides)"


class Verdict(StrEnum):
    REGRESSION = "regression"
    SUSPICIOUS = "suspicious"
    IMPROVED = "improved"
    OK = "ok"
    INSUFFICIENT = "insufficient-data"
    HOST_DRIFT = "host-drift"


class MetricVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: str
    metric: str  # a tracked metric's name, or `lossless` / `run`
    verdict: Verdict
    value: float | None  # `lossless`: the share of outputs equal to the base's
    baseline: float | None
    band: tuple[float, float] | None
    threshold: float | None  # None for `lossless` and `run`: they have no ratio to cross
    run_uid: str
    baseline_uids: list[str] = []
    violating_uids: list[str] = []  # the runs in the violating streak, oldest first
    runs_needed: int | None = None  # insufficient-data: the baseline runs still missing
    note: str | None = None  # host-drift: why the metric was not judged; a band of no width: the rule that then holds

    def text(self) -> str:
        """One line for logs and alerts, e.g. `ngram-local speedup: regression (1.02 vs baseline 1.36, ...)`."""
        detail = []
        if self.value is not None:
            versus = f" vs baseline {self.baseline:.4g}" if self.baseline is not None else ""
            detail.append(f"{self.value:.4g}{versus}")
        if self.threshold is not None and self.baseline is not None:
            detail.append(f"threshold x{self.threshold:g}")
        if len(self.violating_uids) > 1:
            detail.append(f"last {len(self.violating_uids)} runs")
        if self.why:
            detail.append(self.why)
        return f"{self.profile} {self.metric}: {self.verdict.value}" + (f" ({', '.join(detail)})" if detail else "")

    @property
    def why(self) -> str:
        """What the numbers do not say: the runs a baseline still needs, or the note (host drift, a band of no
        width)."""
        if self.runs_needed:
            return f"needs {self.runs_needed} more run{'s' if self.runs_needed > 1 else ''}"
        return self.note or ""


@dataclass(frozen=True)
class Point:
    """One run's value of one metric against its own baseline."""

    run: RunResult
    metric: str
    value: float
    baseline: float | None  # None: fewer than min_baseline_runs earlier runs
    band: tuple[float, float] | None
    baseline_uids: tuple[str, ...]
    violates: bool
    improves: bool
    runs_needed: int = 0  # baseline runs missing before the metric can be judged
    unjudged: str | None = None  # why an absolute metric was not judged (the host's speed moved)
    band_kind: str = NOISE_BAND


def log_band(values: list[float], noise_mads: float, floor: float = 0.0) -> tuple[float, tuple[float, float]]:
    """The baseline (median on the log scale) and its noise band, exp(m +- noise_mads x s), s = the
    larger of 1.4826 x MAD of the logs and `floor` (a known noise, on the log scale): a factor around
    the baseline, above zero whatever the values."""
    logs = [math.log(max(v, LOG_FLOOR)) for v in values]
    center = statistics.median(logs)
    half = noise_mads * max(MAD_SCALE * statistics.median(abs(x - center) for x in logs), floor)
    return math.exp(center), (math.exp(center - half), math.exp(center + half))


def _point(run: RunResult, name: str, value: float, pool: list[tuple[RunResult, float]],
           policy: RegressionPolicy, floor: float = 0.0, drift: str | None = None) -> Point:
    """The run's value against its pool; `drift`: why the host's speed moved (host_drift), judged once for the
    run: its absolute metrics are then not judged, all of them."""
    uids = tuple(q.uid for q, _ in pool)
    if len(pool) < policy.min_baseline_runs:
        return Point(run, name, value, None, None, uids, violates=False, improves=False,
                     runs_needed=policy.min_baseline_runs - len(pool))
    base, (low, high) = log_band([v for _, v in pool], policy.noise_mads, floor)
    kind = AA_BAND if floor and low < log_band([v for _, v in pool], policy.noise_mads)[1][0] else NOISE_BAND
    if position(name) is not None and (counted := counting_band(pool)) and (counted[0] < low or counted[1] > high):
        kind, low, high = COUNT_BAND, min(low, counted[0]), max(high, counted[1])
    if kind is NOISE_BAND and low == high:  # every baseline run measured the same: deterministic
        kind = EXACT_BAND
    t = policy.threshold(name)
    if drift and metric(name).absolute:
        return Point(run, name, value, base, (low, high), uids, violates=False, improves=False, unjudged=drift,
                     band_kind=kind)
    if metric(name).higher_is_better:
        violates, improves = value < base * t and value < low, value > base / t and value > high
    else:
        violates, improves = value > base * t and value > high, value < base / t and value < low
    return Point(run, name, value, base, (low, high), uids, violates, improves, band_kind=kind)


def _aa_floor(run: RunResult, aa_runs: list[RunResult], key: str, policy: RegressionPolicy) -> float:
    """The A/A spread of the calibration runs before `run` on its baseline_key within the window, or 0
    when fewer than min_baseline_runs of them."""
    since = run.started_at - policy.window_s
    points = [q.speedup.point for q in aa_runs
              if baseline_key(q) == key and since <= q.started_at <= run.started_at and q.speedup is not None]
    return aa_spread(points) if len(points) >= policy.min_baseline_runs else 0.0


def series(history: list[RunResult], policy: RegressionPolicy) -> dict[str, list[Point]]:
    """Every tracked metric of every judged run against its own baseline, oldest first (A/A runs only
    set the speedup's noise floor)."""
    ordered = [r for r in chronological(history) if judged(r)]
    runs = [r for r in ordered if not is_calibration(r)]
    aa_runs = [r for r in ordered if is_calibration(r)]
    values = {r.uid: metric_values(r) for r in runs}
    keys = {r.uid: baseline_key(r) for r in runs}
    out: dict[str, list[Point]] = defaultdict(list)
    violated: dict[tuple[str, str], bool] = {}  # (metric, uid) -> that run violated the metric
    for i, run in enumerate(runs):
        since = run.started_at - policy.window_s
        earlier = [q for q in runs[:i] if keys[q.uid] == keys[run.uid] and q.started_at >= since]
        drift = host_drift(run, earlier, policy)  # once for the run: every absolute metric alike
        for name, value in values[run.uid].items():
            candidates = [q for q in earlier if name in values[q.uid]]
            # The streak of violating runs just before this one stays out of its baseline: the second
            # bad night must be judged against the good nights, not against the first bad one.
            while candidates and violated[(name, candidates[-1].uid)]:
                candidates.pop()
            pool = [(q, values[q.uid][name]) for q in candidates][-policy.baseline_runs:]
            floor = _aa_floor(run, aa_runs, keys[run.uid], policy) if name == SPEEDUP else 0.0
            point = _point(run, name, value, pool, policy, floor, drift)
            violated[(name, run.uid)] = point.violates
            out[name].append(point)
    return {name: out[name] for name in sorted(out, key=order_key)}


def point_verdicts(points: list[Point]) -> list[Verdict]:
    """Each point's verdict as if it were the newest of `points` (one metric and baseline key, oldest first)."""
    out, streak = [], 0
    for p in points:
        streak = streak + 1 if p.violates else 0
        judged = (Verdict.REGRESSION if streak >= 2 else Verdict.SUSPICIOUS) if streak else (
            Verdict.IMPROVED if p.improves else Verdict.OK)
        out.append(Verdict.INSUFFICIENT if p.baseline is None else Verdict.HOST_DRIFT if p.unjudged else judged)
    return out


def _metric_verdict(points: list[Point], policy: RegressionPolicy) -> MetricVerdict:
    last, verdict = points[-1], point_verdicts(points)[-1]
    streak = [p.run.uid for p in takewhile(lambda p: p.violates, reversed(points))][::-1]  # oldest first
    return MetricVerdict(profile=last.run.profile, metric=last.metric, verdict=verdict, value=last.value,
                         baseline=last.baseline, band=last.band, threshold=policy.threshold(last.metric),
                         run_uid=last.run.uid, baseline_uids=list(last.baseline_uids), violating_uids=streak,
                         runs_needed=last.runs_needed or None, note=last.unjudged or _exact_note(last, policy))


def _exact_note(point: Point, policy: RegressionPolicy) -> str | None:
    """The rule a band of no width leaves, said: its baseline runs all measured the same value."""
    if point.band_kind != EXACT_BAND:
        return None
    return (f"deterministic: its {len(point.baseline_uids)} baseline runs all measured {point.baseline:.4g}, so there "
            f"is no noise band: any move past the threshold x{policy.threshold(point.metric):g} is flagged")


def _failed_verdict(runs: list[RunResult], newest: RunResult) -> MetricVerdict:
    same = [r for r in runs if baseline_key(r) == baseline_key(newest)]
    streak = [r.uid for r in takewhile(lambda r: r.status is Status.FAILED, reversed(same))][::-1]
    verdict = Verdict.REGRESSION if len(streak) >= 2 else Verdict.SUSPICIOUS
    return MetricVerdict(profile=newest.profile, metric=RUN, verdict=verdict, value=None, baseline=None, band=None,
                         threshold=None, run_uid=newest.uid, violating_uids=streak)


def _lossless_verdict(newest: RunResult) -> MetricVerdict:
    check = newest.lossless
    equal = (check.compared - check.mismatches) / check.compared if check and check.compared else None
    return MetricVerdict(profile=newest.profile, metric=LOSSLESS, verdict=Verdict.REGRESSION, value=equal,
                         baseline=None, band=None, threshold=None, run_uid=newest.uid, violating_uids=[newest.uid])


def evaluate(history: list[RunResult], policy: RegressionPolicy) -> list[MetricVerdict]:
    """Verdicts for the newest run of `history` (one profile's runs, any order, any hosts); [] for no runs."""
    if not history:
        return []
    profiles = sorted({r.profile for r in history})
    if len(profiles) > 1:
        raise ValueError(f"evaluate takes one profile's runs; got {', '.join(profiles)}")
    runs = [r for r in chronological(history) if not is_calibration(r)]
    # A/A runs calibrate, a run ended from outside (Ctrl-C, SIGTERM, a cancel) says nothing of what it ran, and a primed
    # drafter cache measured a replay: none is judged, nor starts or breaks a streak of failures
    if not runs or never_judged(runs[-1]):
        return []
    runs = [r for r in runs if not never_judged(r)]
    if not runs:
        return []
    newest = runs[-1]
    if newest.status is Status.FAILED:
        return [_failed_verdict(runs, newest)]
    if lossless_failed(newest):
        return [_lossless_verdict(newest)]
    key = baseline_key(newest)
    verdicts = []
    for points in series(history, policy).values():  # A/A runs included: they set the speedup floor
        own = [p for p in points if baseline_key(p.run) == key]
        if own and own[-1].run.uid == newest.uid:  # a metric the newest run lacks has nothing to judge
            verdicts.append(_metric_verdict(own, policy))
    return verdicts


def regressions(verdicts: list[MetricVerdict]) -> list[MetricVerdict]:
    return [v for v in verdicts if v.verdict is Verdict.REGRESSION]

"""Whether the host's own speed moved under a run, judged once for the run.

An absolute speed (tokens/s, inter-token latency) moves with the host as much as with the build. The same run's
base arm says how fast the host was, speculation aside: where it moved against the baseline runs' base arms,
the run's absolute metrics are `host-drift`, not judged. Once for the run, at one threshold (the tightest of the
absolute metrics'): judged per metric, a host 7% slower was host drift for tokens/s (threshold 0.95) and
`suspicious` for inter-token latency (1.10), one slow host told two ways."""
from __future__ import annotations

import math
import statistics

from specops.regression.metrics import METRICS, host_speed
from specops.regression.policy import RegressionPolicy
from specops.results.model import RunResult


def drift_threshold(policy: RegressionPolicy) -> float:
    """The factor the host's speed may move by: the tightest threshold of the absolute metrics, as a ratio."""
    return min((policy.threshold(name) for name, m in METRICS.items() if m.absolute),
               key=lambda t: abs(math.log(t)))


def host_drift(run: RunResult, earlier: list[RunResult], policy: RegressionPolicy) -> str | None:
    """Why `run`'s absolute metrics are not judged against `earlier` (the judged runs of its baseline key before
    it, oldest first), or None: the host held steady, too few runs to tell, or the policy judges them always."""
    pool = earlier[-policy.baseline_runs:]
    if policy.judge_absolute == "always" or len(pool) < policy.min_baseline_runs:
        return None
    speed, speeds = host_speed(run), [host_speed(q) for q in pool]
    if speed is None or None in speeds:
        return "no base arm in every run to tell the host's speed from speculation's"
    ratio, limit = speed / statistics.median(speeds), drift_threshold(policy)
    if abs(math.log(ratio)) <= abs(math.log(limit)):
        return None
    return (f"the host's own speed (base arm) moved x{ratio:.3g} against its {len(pool)} baseline runs' (past "
            f"x{limit:g}, the absolute metrics' tightest threshold): every absolute metric of the run unjudged")

"""The `regression` flow: run a suite of profiles, judge each new run against its history, alert.

Each profile runs as it would alone: an embedded (CPU pool) profile as a `specdec` subflow in this
process, a GPU profile through its `specdec/<profile>` deployment, so that a worker on the GPU pool
runs it (one at a time per GPU). Every run lands in the shared results database, from which each
metric of the new run is judged against the median of the profile's earlier runs on the same
hardware (specops.regression). A regression emits a `specops.regression.detected` event, which
the automation that prefect.yaml ships turns into a notification, and ends the flow Failed.
Scheduled nightly by cron in prefect.yaml.
"""
from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.deployments import run_deployment
from prefect.states import Failed, State

from flows.specdec import RunFailed, run_specdec
from prefect_adapters.step import step
from specops.fleet.deployments import dispatched
from specops.profile.loader import LoadedProfile
from specops.regression.policy import RegressionPolicy
from specops.regression.suite import SuiteEntry, load_suite
from specops.regression.verdict import MetricVerdict, regressions
from specops.results.model import RunResult
from specops.run.rundir import new_run_id
from tasks.regression import announce_regression, judge_newest_run, publish_trend, read_history

DEPLOYMENT_TIMEOUT_S = 6 * 3600.0  # a GPU run may queue behind others for its GPU before it starts


class RegressionFound(RuntimeError):
    """At least one metric regressed; the flow ends Failed with this as its data."""

    def __init__(self, verdicts: list[MetricVerdict]):
        self.verdicts = verdicts
        found = regressions(verdicts)
        super().__init__(f"{len(found)} regression(s): " + "; ".join(f"{v.profile} {v.metric}" for v in found))

    def __reduce__(self):
        return type(self), (self.verdicts,)


@step
def validate_suite(suite: list[SuiteEntry]) -> list[LoadedProfile]:
    """Every profile of the suite loaded and validated, and each GPU one known to have a deployment,
    before any of them runs."""
    loaded = load_suite(suite)
    for i, (entry, lp) in enumerate(zip(suite, loaded)):
        if dispatched(lp.profile) and lp.path.stem != entry.profile:
            raise ValueError(f"suite[{i}].profile: {entry.profile} needs a GPU worker, and only shipped profiles "
                             f"(profiles/<name>.yaml) have a deployment to reach one; name it by its profile name")
    return loaded


def run_entry(entry: SuiteEntry, loaded: LoadedProfile, run_id: str, timeout_s: float) -> None:
    """One run of the entry, recorded in the results database whatever its outcome."""
    deployment = dispatched(loaded.profile)
    if deployment is None:
        try:
            run_specdec(entry.profile, entry.overrides, run_id)
        except RunFailed as failed:  # recorded as failed: judged like any other run
            get_run_logger().error("%s", failed)
        return
    flow_run = run_deployment(deployment, parameters={"profile": entry.profile, "overrides": entry.overrides,
                                                      "run_id": run_id}, timeout=timeout_s)
    get_run_logger().info("%s: flow run %s ended %s", deployment, flow_run.name,
                          flow_run.state.name if flow_run.state else "without a state")


def up_to(history: list[RunResult], run_id: str, profile: str) -> list[RunResult]:
    """The history as it stood when this run ended: later runs (another schedule's) are not judged here."""
    for i, result in enumerate(history):
        if result.run_id == run_id:
            return history[:i + 1]
    raise RuntimeError(f"{profile}: run {run_id} is not in the results database (it never started, or its "
                       "worker records results elsewhere: check SPECOPS_RESULTS_URL on the workers)")


@flow(name="regression", log_prints=True)
def regression(suite: list[SuiteEntry], policy: RegressionPolicy | None = None,
               deployment_timeout_s: float = DEPLOYMENT_TIMEOUT_S) -> list[MetricVerdict] | State:
    """Run each profile of the suite once and judge it against its history: Completed with the
    verdicts, or Failed (data: RegressionFound) when any metric regressed.

    Args:
        suite: The profiles to run, one after another, each with its overrides; each metric of each is judged
            against that profile's earlier runs.
        policy: How a metric is judged: the baseline runs, thresholds and noise rule (empty: the defaults).
        deployment_timeout_s: How long a GPU profile's run, dispatched to its own deployment, may take.
    """
    policy = policy or RegressionPolicy()
    loaded = validate_suite(suite)
    verdicts: list[MetricVerdict] = []
    for entry, lp in zip(suite, loaded):
        run_id = new_run_id()
        run_entry(entry, lp, run_id, deployment_timeout_s)
        name = lp.profile.name
        history = up_to(read_history(name), run_id, name)
        judged = judge_newest_run(history, policy)
        for verdict in regressions(judged):
            announce_regression(verdict)
        publish_trend(name, history, policy, judged)
        verdicts += judged
    if regressions(verdicts):
        found = RegressionFound(verdicts)
        return Failed(message=str(found), data=found)
    return verdicts

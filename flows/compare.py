"""The `compare` flow: several profiles on one target model, run one after another, in one table.

Each profile runs as `specdec` would run it alone (its speculative variant against the target's
base, in the same run), so each speedup is paired with a base measured beside it; the table and the
plot put them side by side. The profiles must share the target: comparing methods on different
models would say nothing about the methods.
"""
from __future__ import annotations

from prefect import flow, get_run_logger, tags
from prefect.states import State

from flows.finish import table_or_failed
from flows.specdec import RunFailed, run_specdec
from prefect_adapters.parameters import Overrides, ProfileNames, RunId
from prefect_adapters.refusal import checked_or_refused, handed_over, loaded_or_refused, refused_run_id
from specops.profile.loader import check_comparable
from specops.results.model import RunResult
from specops.results.role import COMPARE, RunRole
from tasks.compare import publish_comparison


@flow(name="compare", log_prints=True)
def compare(profiles: ProfileNames, overrides: Overrides = (), run_id: RunId = "") -> str | State:
    """Run each profile (the same overrides for all) and return the one table of them."""
    overrides = list(overrides or [])
    loads = []
    for profile in profiles:  # each profile's one load in this flow (its caller's, where it made one)
        if isinstance(loaded := loaded_or_refused(profile, overrides), State):
            return loaded
        loads.append((profile, overrides, loaded))
    if isinstance(refused := checked_or_refused(lambda: check_comparable([m for _, _, m in loads])), State):
        return refused
    if (refused := refused_run_id(run_id, "compare")) is not None:
        return refused
    results: list[RunResult] = []
    # a label for people; the role makes each run publish under compare-<profile>-* keys; each run takes its load
    with tags(COMPARE), handed_over(*loads):
        for profile in profiles:
            try:
                results.append(run_specdec(profile, overrides, role=RunRole(kind=COMPARE)))
            except RunFailed as failed:  # recorded and reported; its row says FAILED
                get_run_logger().error("%s", failed)
                results.append(failed.result)
    return table_or_failed("comparison", publish_comparison(results, run_id), results)

"""The `calibrate` flow: a profile's base measured against itself, `runs` times, in the run's own design.

Each A/A run is the profile's `specdec` run with its method replaced by `none` (both arms serve
the base), recorded in the results database like any run. The table says how many intervals
contain 1.00x and how far the false speedups stray (specops/results/calibration.py); the
regression rule takes that spread as the speedup's noise floor.
"""
from __future__ import annotations

from prefect import flow, get_run_logger, tags
from prefect.states import State

from flows.finish import table_or_failed
from flows.specdec import RunFailed, run_specdec
from prefect_adapters.parameters import ABRuns, CalibrationRuns, Overrides, ProfileName, RunId, default_of
from prefect_adapters.refusal import checked_or_refused, handed_over, loaded_or_refused, refused_run_id
from specops.profile.calibration import calibration_of
from specops.results.calibration import AA_OVERRIDE, Calibration
from specops.results.model import RunResult
from specops.results.role import CALIBRATE, CALIBRATE_AB, RunRole
from tasks.calibrate import publish_calibration


@flow(name="calibrate", log_prints=True)
def calibrate(profile: ProfileName = default_of(ProfileName), runs: CalibrationRuns = default_of(CalibrationRuns),
              overrides: Overrides = default_of(Overrides), run_id: RunId = default_of(RunId),
              ab_runs: ABRuns = default_of(ABRuns)) -> str | State:
    """Run the profile's A/A measurement `runs` times, then (ab_runs) the profile itself back to back, and return
    the calibration table: whether the intervals hold from run to run, not only within one."""
    overrides = list(overrides or [])
    if isinstance(given := loaded_or_refused(profile, overrides), State):  # the one load; the A/A run's in memory
        return given
    if isinstance(loaded := checked_or_refused(lambda: calibration_of(given, runs, ab_runs)), State):
        return loaded
    if (refused := refused_run_id(run_id, "calibrate", loaded.profile.name)) is not None:
        return refused
    # a label for people; the role makes each A/A run publish under calibrate-<profile>-*; each run takes its load
    with tags(CALIBRATE), handed_over((profile, overrides, given), (profile, [*overrides, AA_OVERRIDE], loaded)):
        results = [_member(profile, [*overrides, AA_OVERRIDE], CALIBRATE, f"A/A run {i + 1} of {runs}")
                   for i in range(runs)]
        ab = [_member(profile, overrides, CALIBRATE_AB, f"A/B run {i + 1} of {ab_runs}") for i in range(ab_runs)]
    table = publish_calibration(Calibration(loaded.profile.name, results, tuple(ab)), run_id)
    return table_or_failed(f"calibration of {loaded.profile.name}", table, [*results, *ab])


def _member(profile: str, overrides: list[str], kind: str, what: str) -> RunResult:
    get_run_logger().info("%s", what)
    try:
        return run_specdec(profile, overrides, role=RunRole(kind=kind))
    except RunFailed as failed:  # recorded and reported; its line says FAILED
        get_run_logger().error("%s", failed)
        return failed.result

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
from prefect_adapters.parameters import CalibrationRuns, Overrides, ProfileName, RunId
from prefect_adapters.refusal import refused_profiles, refused_run_id
from specops.results.calibration import AA_OVERRIDE, Calibration
from specops.results.model import RunResult
from specops.results.role import CALIBRATE, RunRole
from tasks.calibrate import publish_calibration, validate_calibration


@flow(name="calibrate", log_prints=True)
def calibrate(profile: ProfileName = "ngram-local", runs: CalibrationRuns = 20, overrides: Overrides = (),
              run_id: RunId = "") -> str | State:
    """Run the profile's A/A measurement `runs` times and return the calibration table."""
    overrides = list(overrides or [])
    if (refused := refused_profiles([profile], overrides)) is not None:
        return refused
    loaded = validate_calibration(profile, overrides, runs)
    if (refused := refused_run_id(run_id, "calibrate", loaded.profile.name)) is not None:
        return refused
    results: list[RunResult] = []
    with tags(CALIBRATE):  # a label for people; the role makes each A/A run publish under calibrate-<profile>-*
        for i in range(runs):
            get_run_logger().info("A/A run %d of %d", i + 1, runs)
            try:
                results.append(run_specdec(profile, [*overrides, AA_OVERRIDE], role=RunRole(kind=CALIBRATE)))
            except RunFailed as failed:  # recorded and reported; its line says FAILED
                get_run_logger().error("%s", failed)
                results.append(failed.result)
    table = publish_calibration(Calibration(loaded.profile.name, results), run_id)
    return table_or_failed(f"calibration of {loaded.profile.name}", table, results)

"""What `calibrate` may run: a profile whose A/A run (method none) loads and has a base arm to pair."""
from __future__ import annotations

from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile, overridden
from specops.results.calibration import AA_OVERRIDE, MAX_RUNS, MIN_RUNS


def check_runs(runs: int, ab_runs: int) -> None:
    """ProfileError naming the parameter where the A/A or A/B runs asked are too few or too many."""
    if ab_runs == 1 or not 0 <= ab_runs <= MAX_RUNS:
        raise ProfileError("calibrate", [("ab", f"{ab_runs}: 0, or 2 to {MAX_RUNS} A/B runs (one run's interval has "
                                                "nothing to hold against)")])
    if runs < MIN_RUNS:
        raise ProfileError("calibrate", [("runs", f"{runs}: a calibration needs {MIN_RUNS} A/A runs or more "
                                                  "(20 give a coverage worth reading)")])
    if runs > MAX_RUNS:
        raise ProfileError("calibrate", [("runs", f"{runs}: at most {MAX_RUNS} A/A runs (each is a whole run of the "
                                                  "profile); calibrate again later to add more")])


def calibration_of(loaded: LoadedProfile, runs: int, ab_runs: int = 0) -> LoadedProfile:
    """The loaded profile as its A/A runs serve it (in memory), validated; ProfileError naming the field
    otherwise."""
    check_runs(runs, ab_runs)
    loaded = overridden(loaded, [AA_OVERRIDE])
    if not loaded.profile.comparison.baseline:
        raise ProfileError(str(loaded.path), [("comparison.baseline", "false: an A/A calibration measures the "
                                                                      "base against itself, so it needs the base arm")])
    if (why := _no_interval(loaded)) is not None:
        raise ProfileError(str(loaded.path), [("benchmark", why)])
    return loaded


def _no_interval(loaded: LoadedProfile) -> str | None:
    """Why the A/A runs' design gives no speedup interval (a calibration counts intervals that contain 1.00x), or
    None: round blocks need 2 rounds or more; interleaved requests need 2 prompts or more and a design that can
    interleave (the profile loads with benchmark.pairing=requests)."""
    b = loaded.profile.benchmark
    if b.rounds >= 2:
        return None
    if b.pairing != "rounds":
        try:
            overridden(loaded, ["benchmark.pairing=requests"])
        except ProfileError as err:
            blocked = "; ".join(f"{field} {message}" for field, message in err.problems)
        else:
            if b.num_requests >= 2:
                return None
            blocked = f"num_requests {b.num_requests}: an interval over the prompts needs 2 or more"
    else:
        blocked = "pairing is rounds"
    return (f"rounds 1 and {blocked}: no A/A run would have an interval, so there would be no coverage to count; "
            "set --set benchmark.rounds=3 (round blocks), or interleave requests (--set benchmark.interleave=true "
            "--set benchmark.tool=aiperf, 2 or more requests)")

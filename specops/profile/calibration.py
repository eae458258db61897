"""What `calibrate` may run: a profile whose A/A run (method none) loads and has a base arm to pair."""
from __future__ import annotations

from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile, load_profile
from specops.results.calibration import AA_OVERRIDE, MAX_RUNS, MIN_RUNS


def load_calibration(profile: str, overrides: list[str], runs: int) -> LoadedProfile:
    """The profile as its A/A runs serve it, validated; ProfileError naming the field otherwise."""
    if runs < MIN_RUNS:
        raise ProfileError("calibrate", [("runs", f"{runs}: a calibration needs {MIN_RUNS} A/A runs or more "
                                                  "(20 give a coverage worth reading)")])
    if runs > MAX_RUNS:
        raise ProfileError("calibrate", [("runs", f"{runs}: at most {MAX_RUNS} A/A runs (each is a whole run of the "
                                                  "profile); calibrate again later to add more")])
    loaded = load_profile(profile, [*overrides, AA_OVERRIDE])
    if not loaded.profile.comparison.baseline:
        raise ProfileError(str(loaded.path), [("comparison.baseline", "false: an A/A calibration measures the "
                                                                      "base against itself, so it needs the base arm")])
    return loaded

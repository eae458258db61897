"""What `compare-profiles` may put side by side: two or more different profiles of one target model."""
from __future__ import annotations

from collections import defaultdict

from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile

ORIGIN = "compare-profiles"


def check_comparable(loaded: list[LoadedProfile]) -> None:
    """Raise ProfileError naming what makes these loaded profiles (one per argument) no comparison."""
    if len(loaded) < 2:
        raise ProfileError(ORIGIN, [("profiles", f"compare needs two profiles or more; got "
                                                 f"{[str(lp.path) for lp in loaded]}")])
    same: dict[str, list[str]] = defaultdict(list)
    for lp in loaded:
        same[lp.sha256].append(str(lp.path))
    twice = [paths for paths in same.values() if len(paths) > 1]
    if twice:
        # The same profile twice measured the host's noise, not two methods (it once printed 1.43x and
        # 0.46x for one profile, without a word); `specops run` it twice and `specops compare` the runs,
        # which warns when their intervals disagree.
        raise ProfileError(ORIGIN, [("profiles", "compare puts different profiles side by side; these resolve to "
                                    "the same profile: " + "; ".join(" and ".join(paths) for paths in twice)
                                    + ". To measure one profile twice, `specops run` it twice and `specops compare` "
                                    "the runs")])
    targets = {lp.profile.name: lp.profile.target.source for lp in loaded}
    if len(set(targets.values())) > 1:
        raise ProfileError(ORIGIN, [("profiles", "compare puts profiles of one target model side by side; these "
                                    "differ: " + ", ".join(f"{name}: {source}" for name, source in targets.items()))])

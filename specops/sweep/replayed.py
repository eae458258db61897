"""A sweep's series from `specops replay`: the N settings of the profile's own method a replay ranks best (suffix:
the cross-request cache off, as a sweep measures what one request sees), best first."""
from __future__ import annotations

from collections.abc import Callable

from specops.backends.base import PrerequisiteError
from specops.backends.vllm import cpu as vllm_cpu
from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile
from specops.replay.grid import GRIDS, Prediction, Setting, pruned, ranked, replayable
from specops.sweep.grid import K_KEY, MAX_REPLAYED, SweepSetting

Predict = Callable[[LoadedProfile, list[Setting]], list[Prediction]]
FLAG = "--from-replay"


def replay_family(loaded: LoadedProfile) -> list[Setting]:
    """The replay's settings of the profile's method (cache-off only), or the refusal naming the flag."""
    kind = loaded.profile.method.kind
    if kind not in replayable():
        raise ProfileError(str(loaded.path), [(FLAG, f"method {kind!r} of profile {loaded.profile.name!r} has no "
                                                     f"replay: {' and '.join(replayable())} do")])
    return [s for s in GRIDS[kind]() if getattr(s, "cached", 0) == 0]


def check_replayable(loaded: LoadedProfile) -> None:
    """Before any work: the profile's method has a replay, and the vLLM venv whose proposers replay it is there."""
    replay_family(loaded)
    if problems := vllm_cpu.preflight():
        raise PrerequisiteError(loaded.profile.name, problems)


def check_count(n: int) -> int:
    if not 1 <= n <= MAX_REPLAYED:
        raise ProfileError("sweep grid", [(FLAG, f"{n}: give 1 to {MAX_REPLAYED} settings")])
    return n


def as_series(prediction: Prediction) -> SweepSetting:
    """A replayed setting as a sweep series: its K, and its other overrides (replay.grid *Setting.overrides)."""
    knobs = tuple(o for o in prediction.setting.overrides() if o.partition("=")[0] != K_KEY)
    return SweepSetting(k=prediction.setting.k, overrides=knobs)


def replayed_settings(loaded: LoadedProfile, n: int, predict: Predict,
                      prune: bool = False) -> tuple[list[SweepSetting], list[str]]:
    """The N best settings by `predict` (specops.replay.run.predict: the vLLM venv's proposers), in rank order (by
    predicted speedup where a step cost was measured); with `prune`, of them only those whose predicted interval
    reaches the best one's, and why each other is left out."""
    check_count(n)
    best = ranked(predict(loaded, replay_family(loaded)))[:n]
    kept, why = pruned(best) if prune else (best, [])
    return [as_series(p) for p in kept], why

"""One decorator for a pipeline step: a Prefect task never cached, keeping no result of its own, timed if told.

A step's inputs are a run's live objects (its run directory, servers, backends) and what it returns belongs to that
run, which records it itself (manifest.json, the results database); Prefect's cache keys would hash them and its
result storage would pickle them. A step that caches (a download, a build, a render, a training) looks its entry up
in the verified store itself: nothing outside the store points into it.
"""
from __future__ import annotations

import functools
import inspect

from prefect import task
from prefect.cache_policies import NO_CACHE


def step(fn=None, /, *, timed: str | None = None, label: str = "{variant.name}", announce: bool = True, **options):
    """`@step` or `@step(retries=2, ...)`: task(cache_policy=NO_CACHE, persist_result=False, **options). With
    `timed`, each call (each retry too) runs in its `run` argument's run.timed(timed, label, announce), `label`
    formatted with the call's arguments: its variant's name unless told (e.g. "{role}", or "results")."""
    def decorate(fn):
        @functools.wraps(fn)  # Prefect reads the step's name, parameters and docstring through it
        def timed_call(*args, **kwargs):
            call = inspect.signature(fn).bind(*args, **kwargs)
            call.apply_defaults()
            with call.arguments["run"].timed(timed, label.format_map(call.arguments), announce):
                return fn(*args, **kwargs)

        return task(cache_policy=NO_CACHE, persist_result=False, **options)(timed_call if timed else fn)

    return decorate(fn) if fn is not None else decorate

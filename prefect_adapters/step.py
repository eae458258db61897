"""One decorator for a pipeline step: a Prefect task that is never cached and keeps no result of its own.

A step's inputs are a run's live objects (its run directory, servers, backends) and what it returns belongs to that
run, which records it itself (manifest.json, the results database); Prefect's cache keys would hash them and its
result storage would pickle them. Retries and their condition pass through (`@step(retries=2, ...)`).
"""
from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE


def step(fn=None, /, **options):
    """`@step` or `@step(retries=..., retry_delay_seconds=..., ...)`: task(cache_policy=NO_CACHE,
    persist_result=False, **options)."""
    decorate = task(cache_policy=NO_CACHE, persist_result=False, **options)
    return decorate(fn) if fn is not None else decorate

"""A profile's prompts as a run sends them: the named workload its benchmark section asks for, fetched and verified,
with how each request goes out (chat or raw) decided for its backend and benchmark tool. Below the pipeline, so the
replay reads the same prompts a run measures without standing on the run's steps."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from specops.backends import BACKENDS
from specops.bench.sampling import Workload, workload_of
from specops.bench.target import request_kind
from specops.bench.tool import BENCH_TOOLS
from specops.profile.schema import Profile


def workload_for(profile: Profile, cache_dir: Path, log: Callable[[str], None] = print) -> Workload:
    """The run's prompts (a named workload fetched and verified), and how they are sent: chat requests or raw, by
    benchmark.api, the prompts' kind and what the backend serves and the tool drives."""
    b = profile.benchmark
    return decided(profile, workload_of(b, profile.comparison.lossless_prompts if profile.comparison.baseline else 0,
                                        cache_dir, log))


def decided(profile: Profile, workload: Workload) -> Workload:
    """The workload with how its requests are sent decided (chat or raw), for this backend and tool."""
    b = profile.benchmark
    return replace(workload, request=request_kind(b.api, workload.conversations, BENCH_TOOLS.get(b.tool).apis,
                                                  BACKENDS.get(profile.backend.kind).apis))

"""Where runs write: the artifacts and cache roots, and whether they have the room a run needs."""
from __future__ import annotations

import shutil
from pathlib import Path

from specops.settings import env_name, settings


def artifacts_root() -> Path:
    return settings().specops_artifacts.resolve()


def cache_root() -> Path:
    """Cross-run cache for models and rendered repositories ($SPECOPS_CACHE, else $XDG_CACHE_HOME/specops,
    else ~/.cache/specops): the one default for the host's CLI runs and `make up`'s worker (the Makefile asks
    `specops settings --get SPECOPS_CACHE`)."""
    s = settings()
    if s.specops_cache is not None:
        return s.specops_cache.resolve()
    return (s.xdg_cache_home or Path.home() / ".cache") / "specops"


_ROOTS = {"specops_artifacts": artifacts_root, "specops_cache": cache_root}
ROOT_VARIABLES = tuple(env_name(field) for field in _ROOTS)


def roots() -> dict[str, Path]:
    """The roots a run writes under, by their variable: the values in effect, defaults resolved."""
    return {env_name(field): root() for field, root in _ROOTS.items()}


def existing_ancestor(path: Path) -> Path:
    """`path`, or its nearest parent that exists: where a directory not made yet (mkdir(parents=True) makes
    it) will live, so the disk and the permissions that count for it."""
    existing = Path(path)
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    return existing


def free_space_problem() -> str | None:
    """Less free space under the artifacts or the cache root than a run needs; None if enough.
    (A full disk mid-run still ends the run FAILED at its step, naming the file: this makes it rare.)"""
    need_mb = settings().specops_min_free_mb
    # The cache too: a run renders its repositories and takes its locks there, even when every model is cached.
    for var, root in roots().items():
        try:
            free_mb = shutil.disk_usage(existing_ancestor(root)).free / 2**20
        except OSError:
            continue  # not a directory we can look at: the writability check says why
        if free_mb < need_mb:  # one disk short is one message, even when both roots are on it
            return (f"{var}={root}: {free_mb:.0f} MB free, below the {need_mb} MB a run needs "
                    f"(SPECOPS_MIN_FREE_MB); free space there, or point {var} at a disk with room")
    return None

"""Helpers for tests that run real services: isolated run dirs and Prefect homes, shared model cache."""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# The embedded model conversion is shared by every test (and by `make demo`) through this cache.
SHARED_CACHE = Path(os.environ.get("SPECOPS_CACHE", REPO_ROOT / ".cache" / "specops"))


def service_env(tmp: Path, **extra: str) -> dict[str, str]:
    """Environment for a specops/prefect subprocess: own artifacts and Prefect home, shared model cache."""
    env = dict(os.environ)
    env.update(
        SPECOPS_CACHE=str(SHARED_CACHE),
        SPECOPS_ARTIFACTS=str(tmp / "artifacts"),
        PREFECT_HOME=str(tmp / "prefect-home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_LOGGING_LEVEL="INFO",
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    env.pop("PREFECT_API_URL", None)
    env.update(extra)
    return env



"""manifest.json: what produced a run, so it can be reproduced and compared."""
from __future__ import annotations

import platform
import socket
import sys
from importlib import metadata

from specops.sources.base import ModelArtifact

PACKAGES = ("specops", "prefect", "torch", "transformers", "tritonclient", "nvidia-pytriton",
            "genai-perf", "numpy", "pandas", "pydantic", "huggingface_hub", "gguf")


def package_versions() -> dict[str, str | None]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def host_info() -> dict[str, str | int]:
    import os

    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count() or 0,
    }


def build_manifest(profile_name: str, profile_sha256: str, run_id: str, models: dict[str, ModelArtifact],
                   tools: dict[str, str], extra: dict | None = None) -> dict:
    return {
        "profile": profile_name,
        "profile_sha256": profile_sha256,
        "run_id": run_id,
        "models": {
            role: {"source": a.source, "sha256": a.sha256, "revision": a.revision, "path": str(a.path), **a.extra}
            for role, a in models.items()
        },
        "packages": package_versions(),
        "tools": tools,
        "host": host_info(),
        **(extra or {}),
    }

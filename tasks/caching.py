"""Cross-run cache keys built from content, never from run ids or path strings alone.

Prefect's default policy includes RUN_ID (so nothing is reused across runs), and Path inputs
hash by their string, not their content. This policy hashes: a recipe version (bump it when
a step's output format changes), the task's source, and canonical JSON of the inputs in which
model artifacts stand for their content sha256. A generation token stored in the cache
directory is part of every key, so deleting the cache invalidates the Prefect records that
point into it instead of handing back paths that no longer exist.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect.cache_policies import TASK_SOURCE, CachePolicy
from pydantic import BaseModel

from specops.sources.base import ModelArtifact
from specops.sources.integrity import GENERATION


def cache_generation(cache_dir: Path) -> str:
    # Quarantining a corrupt entry removes it too (specops/sources/integrity.py).
    marker = Path(cache_dir) / GENERATION
    if not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(secrets.token_hex(8))
    return marker.read_text().strip()


def canonical(value: Any) -> Any:
    if isinstance(value, ModelArtifact):
        return {"source": value.source, "sha256": value.sha256, "revision": value.revision}
    if hasattr(value, "cache_identity"):  # a backend: its settings, never its object identity
        return canonical(value.cache_identity())
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return canonical(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted(canonical(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


@dataclass
class ContentKey(CachePolicy):
    recipe: str = "1"
    cache_dir_input: str = "cache_dir"  # the input naming the cache directory that holds outputs
    ignore: tuple[str, ...] = ()  # inputs that do not shape the output (e.g. the run directory)

    def compute_key(self, task_ctx, inputs: dict[str, Any], flow_parameters: dict[str, Any],
                    **kwargs: Any) -> str | None:
        source = TASK_SOURCE.compute_key(task_ctx, inputs, flow_parameters, **kwargs) or ""
        cache_dir = inputs.get(self.cache_dir_input)
        payload = {
            "recipe": self.recipe,
            "task": task_ctx.task.name,
            "source": source,
            "generation": cache_generation(Path(cache_dir)) if cache_dir else None,
            "inputs": canonical({k: v for k, v in inputs.items() if k not in self.ignore}),
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()

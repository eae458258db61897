"""Fetch model checkpoints; cached by source and content across runs."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task

from specops.sources.base import ModelArtifact
from specops.sources.schemes import fetch
from tasks.caching import ContentKey


@task(cache_policy=ContentKey(recipe="download-1"), persist_result=True, retries=1, retry_delay_seconds=5)
def download_model(source: str, cache_dir: Path) -> ModelArtifact:
    """Download (and convert, for the embedded GGUF) a model into the cache."""
    log = get_run_logger()
    artifact = fetch(source, cache_dir, log=log.info)
    log.info("model %s -> %s (sha256 %s)", source, artifact.path, artifact.sha256[:12])
    return artifact

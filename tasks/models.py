"""Fetch model checkpoints; cached by source and content across runs."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from specops.rundir import RunDir
from specops.sources.base import ModelArtifact
from specops.sources.schemes import fetch
from tasks.caching import ContentKey


@task(cache_policy=ContentKey(recipe="download-1", ignore=("run", "role")), persist_result=True, retries=1,
      retry_delay_seconds=5)
def download_model(source: str, cache_dir: Path, run: RunDir, role: str = "target") -> ModelArtifact:
    """Download (and convert, for the embedded GGUF) a model into the cache."""
    log = get_run_logger()
    with run.timed("download", role):
        artifact = fetch(source, cache_dir, log=log.info)
    log.info("model %s -> %s (sha256 %s)", source, artifact.path, artifact.sha256[:12])
    return artifact


@task(cache_policy=NO_CACHE)
def check_draft_vocabulary(target: ModelArtifact, draft: ModelArtifact) -> None:
    """Refuse a draft whose tokenizer is not the target's, before anything is built or served."""
    from transformers import AutoConfig, AutoTokenizer

    from specops.runtime.vocab import check_same_vocabulary

    tokenizer = AutoTokenizer.from_pretrained(str(target.path))
    check_same_vocabulary(draft.path, tokenizer, AutoConfig.from_pretrained(str(target.path)))
    get_run_logger().info("draft %s shares the target's tokenizer", draft.source)

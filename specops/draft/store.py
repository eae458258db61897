"""Where synthesized data and trained drafts live in the cache, keyed by what made them.

Both are content-addressed: data by the data spec and the target's content; a draft by the
training spec, draft length, the target and the data's content. A `.complete` marker is
written last, so an interrupted step is redone (synthesis resumes its JSONL) rather than
reused half-made.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from specops.draft.prompt_sources import PromptItem, conversation_prompts, humaneval_prompts, stdlib_prompts
from specops.draft.spec import DataSpec, TrainSpec
from specops.sources.base import ModelArtifact, hash_file

DATA_RECIPE = "train-data-1"  # bump when the synthesized record format changes
DRAFT_RECIPE = "draft-2"  # bump when training or the export layout changes
DATA_FILE = "data.jsonl"
COMPLETE = ".complete"


def _key(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]


def data_dir(cache_dir: Path, data: DataSpec, target: ModelArtifact) -> Path:
    payload = {"recipe": DATA_RECIPE, "data": data.model_dump(mode="json"), "target": target.sha256}
    if data.conversations:
        payload["conversations_sha256"] = hash_file(Path(data.conversations))
    return Path(cache_dir) / "train-data" / _key(payload)


def draft_dir(cache_dir: Path, train: TrainSpec, draft_length: int, target: ModelArtifact,
              data: ModelArtifact) -> Path:
    payload = {"recipe": DRAFT_RECIPE, "train": train.model_dump(mode="json", exclude={"data"}),
               "draft_length": draft_length, "target": target.sha256, "data": data.sha256}
    return Path(cache_dir) / "drafts" / _key(payload)


def finished_data(directory: Path, source: str) -> ModelArtifact | None:
    """The data set in `directory` if its synthesis completed, else None."""
    if not (directory / COMPLETE).exists():
        return None
    return ModelArtifact(directory / DATA_FILE, source, hash_file(directory / DATA_FILE))


def mark_complete(directory: Path) -> None:
    (directory / COMPLETE).write_text("")


def prompt_items(data: DataSpec, chat_template: Callable[[str], str] | None = None) -> list[PromptItem]:
    """`num_samples` prompts, taken from the sources in turn so each is represented."""
    pools: list[list[PromptItem]] = []
    for source in data.prompts:
        if source == "humaneval":
            pools.append(humaneval_prompts(skip=data.humaneval_holdout))
        else:
            pools.append(stdlib_prompts(limit=data.num_samples, seed=data.seed))
    if data.conversations:
        items = conversation_prompts(Path(data.conversations))
        if chat_template is not None:
            # A raw-completion server needs the chat template applied by us.
            items = [PromptItem(i.id, i.source, chat_template(i.text)) for i in items]
        pools.append(items)
    picked: list[PromptItem] = []
    index = 0
    while len(picked) < data.num_samples and any(index < len(pool) for pool in pools):
        picked.extend(pool[index] for pool in pools if index < len(pool))
        index += 1
    return picked[:data.num_samples]

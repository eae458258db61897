"""One file of a Hugging Face dataset, named as `hf://datasets/org/name[@revision]/file.jsonl`: a draft's training
conversations, a benchmark's prompts."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specops.sources.schemes import HUB_NAME_PART

# A conversation file from a Hugging Face dataset, as the seed's prompt source is (`--data_path
# Daring-Anteater/train.jsonl`): only that file is downloaded, at the commit the revision resolves to.
PREFIX = "hf://datasets/"
FORM = "hf://datasets/org/name[@revision]/file.jsonl"


@dataclass(frozen=True)
class DatasetFile:
    repo_id: str
    revision: str | None
    filename: str


def is_dataset_uri(text: str) -> bool:
    return text.startswith(PREFIX)


def parse_dataset_uri(text: str) -> DatasetFile:
    """Split the URI; ValueError naming the expected form."""
    parts = text[len(PREFIX):].split("/")
    if len(parts) < 3 or not all(parts):
        raise ValueError(f"{text!r}: expected {FORM}")
    org, name_rev, *path = parts
    name, _, revision = name_rev.partition("@")
    if not HUB_NAME_PART.match(org) or not HUB_NAME_PART.match(name) or ("@" in name_rev and not revision):
        raise ValueError(f"{text!r}: bad dataset id; expected {FORM}")
    filename = "/".join(path)
    if not filename.endswith((".jsonl", ".jsonl.gz")) or ".." in path:
        raise ValueError(f"{text!r}: the file must be a .jsonl or .jsonl.gz inside the dataset; expected {FORM}")
    return DatasetFile(f"{org}/{name}", revision or None, filename)


def fetch_dataset_file(text: str, cache_dir: Path) -> Path:
    """The file on disk (downloaded once into <cache>/hf, huggingface_hub's own layout; token from HF_TOKEN only)."""
    from huggingface_hub import hf_hub_download

    from specops.settings import secret, settings
    from specops.sources.hf import HUB_CACHE

    ref = parse_dataset_uri(text)
    return Path(hf_hub_download(ref.repo_id, ref.filename, repo_type="dataset", revision=ref.revision,
                                cache_dir=str(Path(cache_dir) / HUB_CACHE), token=secret(settings().hf_token)))

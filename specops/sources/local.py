"""A checkpoint that already sits on local disk (trained here, copied in, mounted)."""
from __future__ import annotations

from pathlib import Path

from specops.sources.base import ModelArtifact, hash_dir

# What a served target needs beside its weights: the server and the benchmark tokenize with it. Any one
# of these is a tokenizer transformers loads (fast, sentencepiece, BPE vocabulary, tiktoken): the tokenizer
# files of specops/sources/hub_files.py::CHECKPOINT.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "*.tiktoken")


def missing_target_files(path: Path) -> list[str]:
    """What a checkpoint directory lacks to be served as a target (a draft head needs no tokenizer)."""
    path = Path(path)
    missing = [] if (path / "config.json").is_file() else ["config.json"]
    if not any(found.is_file() for pattern in TOKENIZER_FILES for found in path.glob(pattern)):
        missing.append(f"a tokenizer (one of {', '.join(TOKENIZER_FILES)})")
    return missing


def fetch_local(path: Path) -> ModelArtifact:
    """Validate an HF-style checkpoint directory and hash its content."""
    resolved = Path(path).expanduser().resolve()
    if not resolved.exists():
        raise FileNotFoundError(f"local model path does not exist: {resolved}")
    if not resolved.is_dir():
        raise NotADirectoryError(f"local model path is not a directory: {resolved}")
    if not (resolved / "config.json").is_file():
        raise FileNotFoundError(
            f"local model path has no config.json (not an HF checkpoint dir?): {resolved}"
        )
    return ModelArtifact(path=resolved, source=f"local:{resolved}", sha256=hash_dir(resolved))

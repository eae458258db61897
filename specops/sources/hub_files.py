"""Which files of a hub checkpoint a backend reads: `snapshot_download(allow_patterns=...)`.

A hub repository often carries a checkpoint several times over (safetensors, PyTorch .bin, Meta's
original/*.pth, GGUF, ONNX); a backend loads one of them. The download takes the metadata every
loader reads plus the first weight format the repository has, in the backend's order of preference
(what vLLM's loader does too), so a Llama 3.1 8B repository costs its 16 GB of safetensors, not 32 GB.
Patterns are matched as huggingface_hub matches them (fnmatch on the repository path: `*` crosses `/`).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class HubFiles:
    """A backend's registry fact: the files it reads from a hub checkpoint (specops/backends/__init__.py)."""

    always: tuple[str, ...]  # config, tokenizer, generation config, custom code
    weights: tuple[str, ...]  # weight formats, preferred first: only the first the repository has is taken

    def patterns(self, repo_files: Iterable[str] | None) -> tuple[str, ...]:
        """allow_patterns for a repository holding repo_files (None: unknown, e.g. offline; then every format)."""
        from huggingface_hub.utils import filter_repo_objects  # noqa: PLC0415 - the hub client's own matching

        if repo_files is not None:
            files = list(repo_files)
            for weights in self.weights:
                if any(True for _ in filter_repo_objects(files, allow_patterns=[weights])):
                    return (*self.always, weights)
        return (*self.always, *self.weights)

def selected(patterns: tuple[str, ...], rel: str) -> bool:
    """Whether a snapshot file belongs to the download made with `patterns`."""
    from huggingface_hub.utils import filter_repo_objects  # noqa: PLC0415

    return any(True for _ in filter_repo_objects([rel], allow_patterns=list(patterns)))


# What a Hugging Face checkpoint loader reads (transformers, vLLM, TensorRT-LLM's checkpoint converters and
# LLM API): config and generation config (*.json), tokenizers (tokenizer*, *.model, *.tiktoken, vocab/merges
# *.txt), chat templates (*.jinja), remote code (*.py); weights as safetensors, else PyTorch pickles
# (*.bin; Medusa heads ship as *.pt).
CHECKPOINT = HubFiles(
    always=("*.json", "tokenizer*", "*.model", "*.tiktoken", "*.txt", "*.jinja", "*.py"),
    weights=("*.safetensors", "*.bin", "*.pt", "*.pth"),
)

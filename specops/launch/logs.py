"""Saving container logs: written whole into the run directory, secret values masked."""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from specops.atomic_file import write_text

MASK = "***"
TAIL_LINES = 40


def redact(text: str, secret_names: Iterable[str]) -> str:
    """text with the current values of the named environment variables replaced by ***."""
    for name in secret_names:  # any name a spec passes on, so os.environ rather than a fixed settings field
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, MASK)
    return text


def container_text(container, secret_names: Iterable[str]) -> str:
    """stdout+stderr of a container as text, redacted; empty if the daemon no longer has it."""
    from docker.errors import APIError, NotFound

    try:
        raw = container.logs(stdout=True, stderr=True)
    except (NotFound, APIError):
        return ""
    return redact(raw.decode("utf-8", errors="replace"), secret_names)


def save(log_path: Path, text: str) -> None:
    write_text(log_path, text)


def tail(text: str, lines: int = TAIL_LINES) -> str:
    kept = text.rstrip("\n").splitlines()[-lines:]
    return "\n".join(kept) if kept else "(no output)"

"""The one way a run writes its files: whole or not at all, and an error that names the file.

A file is written to a temporary name beside it, flushed to disk and renamed over the old one, so a
reader (the janitor, the UI, `specops results import`) never sees half a file, a full disk never
leaves a 0-byte report, and a failed write leaves no temporary file behind.
"""
from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


class RunFileError(OSError):
    """A run file could not be written; the message names it and says why (e.g. the disk is full)."""

    def __str__(self) -> str:  # the sentence alone, without OSError's "[Errno 28]" prefix
        return self.strerror or super().__str__()


def _temporary(path: Path) -> Path:
    # Ends in .tmp, not in the file's suffix: readers glob for "*.json" (the janitor's records) and must not
    # take a file being written for a damaged one. Writers that infer a format from the name are told it.
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(3)}.tmp")


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """Yield a temporary path to write `path`'s new content to; on success it replaces `path`."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _named(exc, path) from None
    tmp = _temporary(path)
    try:
        yield tmp
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise _named(exc, path) from None
    finally:
        with suppress(OSError):  # a read-only file system refuses even this: the error naming the file must win
            tmp.unlink(missing_ok=True)


def write_bytes(path: Path, data: bytes) -> Path:
    with replacing(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def write_figure(figure, path: Path, dpi: int) -> Path:
    """A matplotlib figure, in the format its name says (the temporary name has none)."""
    with replacing(path) as tmp:
        figure.savefig(tmp, dpi=dpi, format=Path(path).suffix.lstrip(".") or "png")
    return Path(path)


def _named(exc: OSError, path: Path) -> RunFileError:
    if isinstance(exc, RunFileError):
        return exc
    why = exc.strerror or str(exc)
    # Run files live under SPECOPS_ARTIFACTS, records and locks under SPECOPS_CACHE: the path says which.
    hint = "; free space on that disk" if exc.errno == errno.ENOSPC else ""
    return RunFileError(exc.errno, f"cannot write {path}: {why}{hint}")

"""Cache entries that are one JSON document (the replay's greedy outputs, a sweep's measured cells), held to what
every entry of the cache is held to (specops/sources/integrity.py): verified on every read, and a damaged one named,
moved aside as `<name>.corrupt-<UTC time>` (the evidence) and made again.

Each is written whole (specops/atomic_file.py) with the sha256 of its content beside it, and read back only when the
content still hashes to it and has the shape its reader expects (`check`). Before, a greedy-output entry cut in half,
or `{"sequences": []}`, failed every later replay of that target and prompt shape with a JSONDecodeError or an
IndexError, for good, and one with other tokens was trusted as it was.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specops.atomic_file import write_text

SHA256 = "sha256"
Check = Callable[[dict[str, Any]], str | None]  # the entry's content -> what is wrong with its shape, or None


def _digest(content: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def write_entry(path: Path, content: dict[str, Any]) -> Path:
    """The entry, whole or not at all, with its content's sha256."""
    return write_text(Path(path), json.dumps({**content, SHA256: _digest(content)}))


def read_entry(path: Path, check: Check, say: Callable[[str], None]) -> dict[str, Any] | None:
    """The entry's content when it verifies; None when it is missing, or damaged: then it is moved aside and `say`
    names it, why and where it went (the caller makes it again)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        return _damaged(path, f"unreadable ({err})", say)
    try:
        document = json.loads(text)
    except ValueError as err:
        return _damaged(path, f"not whole JSON ({err})", say)
    if not isinstance(document, dict) or SHA256 not in document:
        return _damaged(path, "no sha256 of its content (cut short, or written by hand)", say)
    content = {k: v for k, v in document.items() if k != SHA256}
    if document[SHA256] != _digest(content):
        return _damaged(path, "its content no longer hashes to the sha256 it was written with (edited)", say)
    if problem := check(content):
        return _damaged(path, problem, say)
    return content


def _damaged(path: Path, why: str, say: Callable[[str], None]) -> None:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    dest, n = path.with_name(f"{path.name}.corrupt-{stamp}"), 1
    while dest.exists():
        n += 1
        dest = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    try:
        os.rename(path, dest)
        where = f"moved to {dest} (kept as evidence; delete it once you no longer need it)"
    except FileNotFoundError:  # a concurrent reader saw the same damage and moved it first
        where = "moved aside by another run"
    except OSError as err:
        where = f"could not be moved aside ({err}); it is made again over it"
    say(f"cache entry {path} is damaged: {why}; {where}; making it again")
    return None

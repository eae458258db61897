"""Cache entries that show, on every use, that they still hold what they were published with.

At publish an entry records a file manifest: each file's size, mtime_ns, ctime_ns, inode and
sha256, and the whole-entry hash (hash_dir's, which keys every cache above it). On use every
file is stat'ed, and only files whose stat differs from the record are read and hashed again:
a same-size rewrite moves mtime, and one that puts mtime back (touch -r, cp -p) still moves
ctime, which user space cannot set. Measured on the embedded entry (540 MB, 6 files, page
cache warm, 2 shared cores): hash_dir 0.41-0.53 s, this check 0.3 ms. Hashing in full on
every use would also catch what stat cannot see (bit rot below the filesystem), but at ~1 s
per GB from memory and disk speed cold that is tens of seconds to minutes per run for a
multi-GB hub checkpoint; a copied or chmod'ed entry pays it once, then is cheap again.

A corrupt entry is moved aside, not deleted, so the evidence stays and the next run rebuilds
it; and the run stops with one message naming the entry, the files that differ, where it went and the fix.
This store is the only cache across runs; specops/sources/entry_lock.py makes each entry once.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from specops.sources.schemes import content_files, hash_file

_STAT_FIELDS = ("size", "mtime_ns", "ctime_ns", "ino")


@dataclass(frozen=True)
class Entry:
    """One cache entry: what moves aside when corrupt, what is served, and where its record is."""

    root: Path  # the directory quarantined as a whole
    content: Path  # the files served and hashed (root itself, or a directory inside it)
    manifest: Path  # the file manifest (outside content, or named in exclude)
    rebuild: str  # what the next run does instead, e.g. "converts it again from the cached wheel"
    exclude: frozenset[str] = field(default_factory=frozenset)  # bookkeeping names at content's top level
    # Which content files the entry holds, when the directory can hold more (a hub snapshot that another
    # download with other allow_patterns filled further); None: every file.
    keep: Callable[[str], bool] | None = field(default=None, compare=False)


class CacheCorruptError(RuntimeError):
    """A cache entry no longer holds what it was published with; the run must not serve it."""

    def __init__(self, entry: Path, problems: list[str], moved_to: Path | None, rebuild: str,
                 move_error: str | None = None):
        self.entry, self.problems, self.moved_to, self.rebuild = entry, problems, moved_to, rebuild
        self.move_error = move_error
        if moved_to is not None:
            where = f"moved it to {moved_to} (kept as evidence)"
            fix = f"run again: the next run {rebuild}; delete {moved_to} once you no longer need it"
        elif move_error is not None:
            where = f"could not move it aside ({move_error})"
            fix = f"delete {entry} and run again: the next run {rebuild}"
        else:
            where = "nothing left to move aside"
            fix = f"run again: the next run {rebuild}"
        # No closing period: the CLI and the report append "; report: ..." to it.
        super().__init__(f"cache entry {entry} is corrupt: {'; '.join(problems)}. "
                         f"Stopped before serving it; {where}. Fix: {fix}")

    def __reduce__(self):  # Prefect pickles a failed task's exception; rebuild it from its fields
        return type(self), (self.entry, self.problems, self.moved_to, self.rebuild, self.move_error)


def publish(entry: Entry) -> str:
    """Hash the entry's files, record the manifest, return the whole-entry hash."""
    manifest = _scan(entry)
    _write(entry.manifest, manifest)
    return manifest["sha256"]


# Moves a corrupt entry aside and returns where; told which files' bytes differ (None: not known).
Mover = Callable[[Entry, "list[str] | None"], Path]


def verify(entry: Entry, expected: str | None = None, move_aside: Mover | None = None) -> str:
    """The whole-entry hash of what the entry holds now, or CacheCorruptError (entry moved aside).

    `expected` is the hash the entry was published with where one was kept apart from the
    manifest; an entry published before manifests existed is hashed in full once, checked
    against it (or trusted on first use when nothing was kept, as before) and recorded.
    """
    try:
        recorded = _read(entry.manifest)
    except ValueError as err:
        raise _corrupt(entry, [str(err)], None, move_aside) from None
    if recorded is None:
        current = _scan(entry)
        if expected is not None and current["sha256"] != expected:
            raise _corrupt(entry, [f"content hash {current['sha256'][:12]} differs from the {expected[:12]} "
                                   "it was published with"], None, move_aside)
        _write_quietly(entry.manifest, current)
        return current["sha256"]
    problems, damaged, restated = _compare(entry, recorded["files"])
    if expected is not None and recorded["sha256"] != expected:
        problems.append(f"its manifest records {recorded['sha256'][:12]}, published as {expected[:12]}")
        damaged = None
    if problems:
        raise _corrupt(entry, problems, damaged, move_aside)
    if restated:  # same bytes, new stat (a copy, a chmod): remember it so the next check is cheap again
        _write_quietly(entry.manifest, {**recorded, "files": {**recorded["files"], **restated}})
    return recorded["sha256"]


def rename_into_place(scratch: Path, dest: Path, published: Callable[[Path], bool]) -> bool:
    """Publish a finished scratch directory (a sibling of dest) as dest in one rename.

    Readers see no entry or a whole one. When a concurrent writer published dest first
    (`published(dest)`), its entry stays and scratch is left for the caller to remove: False.
    A leftover dest that is not published (a crash of an older layout) is replaced.
    """
    # Only a rename changes what dest names (a leftover never becomes published in place), so
    # nothing here deletes by the name dest: a leftover is renamed aside first and judged there.
    for _ in range(_RENAME_ATTEMPTS):
        if published(dest):
            return False
        try:
            os.rename(scratch, dest)  # replaces a missing or empty dest, never a full one
            return True
        except OSError as err:
            if err.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise
        _move_leftover_aside(dest, published)
    raise RuntimeError(f"could not publish {scratch} as {dest}: something keeps putting an unpublished "
                       f"entry there ({_RENAME_ATTEMPTS} attempts). Fix: stop whatever writes into {dest}, "
                       "delete it and run again")


_RENAME_ATTEMPTS = 5


def _move_leftover_aside(dest: Path, published: Callable[[Path], bool]) -> None:
    """Remove dest if it is an unpublished leftover; a published entry stays at dest."""
    aside = dest.with_name(f".{dest.name}.leftover-{secrets.token_hex(4)}")
    try:
        os.rename(dest, aside)
    except FileNotFoundError:  # a concurrent writer moved it first
        return
    if published(aside):
        # A writer published dest between our look and the move: put its entry back. If yet
        # another writer filled dest meanwhile, this copy is reachable by no name a reader
        # looks up, and files already open stay readable after their names go.
        with suppress(OSError):
            os.rename(aside, dest)
            return
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)


def quarantine(entry: Entry, damaged: list[str] | None = None) -> Path:
    """Move the entry to a sibling `<name>.corrupt-<UTC time>`; the next run finds it missing."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    dest = entry.root.with_name(f"{entry.root.name}.corrupt-{stamp}")
    n = 1
    while dest.exists():
        n += 1
        dest = entry.root.with_name(f"{entry.root.name}.corrupt-{stamp}-{n}")
    os.rename(entry.root, dest)
    return dest


def _corrupt(entry: Entry, problems: list[str], damaged: list[str] | None,
             move_aside: Mover | None) -> CacheCorruptError:
    try:
        moved = (move_aside or quarantine)(entry, damaged)
    except FileNotFoundError:  # a concurrent run saw the same damage and moved it first
        return CacheCorruptError(entry.root, problems, None, entry.rebuild)
    except OSError as err:
        return CacheCorruptError(entry.root, problems, None, entry.rebuild, move_error=str(err))
    return CacheCorruptError(entry.root, problems, moved, entry.rebuild)


def _files(entry: Entry) -> list[tuple[str, Path]]:
    return [(rel, path) for rel, path in content_files(entry.content)
            if not _bookkeeping(Path(rel).parts[0], entry) and (entry.keep is None or entry.keep(rel))]


def _bookkeeping(top: str, entry: Entry) -> bool:
    # A manifest kept inside the content (a `.complete` marker) and its temporary file while written.
    return top in entry.exclude or (top.startswith(f".{entry.manifest.name}.") and top.endswith(".tmp"))


def _stat(path: Path) -> dict[str, int]:
    st = path.stat()  # follows symlinks: a hub snapshot links to its blobs
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "ino": st.st_ino}


def _scan(entry: Entry) -> dict:
    """Every file's stat and sha256, and hash_dir's whole hash, in one read of each file."""
    whole = hashlib.sha256()
    files = {}
    for rel, path in _files(entry):
        before = _stat(path)
        one = hashlib.sha256()
        whole.update(rel.encode() + b"\0")
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                whole.update(chunk)
                one.update(chunk)
        files[rel] = {**before, "sha256": one.hexdigest()}
    return {"version": 1, "sha256": whole.hexdigest(), "files": files}


def _compare(entry: Entry, recorded: dict[str, dict]) -> tuple[list[str], list[str], dict[str, dict]]:
    """Problems found, the files whose bytes differ, and the records of files whose stat moved
    but whose bytes did not."""
    present = dict(_files(entry))
    problems: list[str] = []
    damaged: list[str] = []
    restated: dict[str, dict] = {}
    for rel, rec in sorted(recorded.items()):
        path = present.pop(rel, None)
        if path is None:
            problems.append(f"{rel}: missing")
            continue
        now = _stat(path)
        if all(now[k] == rec[k] for k in _STAT_FIELDS):
            continue
        if now["size"] != rec["size"]:
            problems.append(f"{rel}: size changed ({rec['size']} -> {now['size']} bytes)")
            damaged.append(rel)
            continue
        digest = hash_file(path)
        if digest != rec["sha256"]:
            problems.append(f"{rel}: content changed (same size, sha256 {rec['sha256'][:12]} -> {digest[:12]})")
            damaged.append(rel)
        else:
            restated[rel] = {**now, "sha256": digest}
    problems += [f"{rel}: not in the entry when it was published" for rel in sorted(present)]
    return problems, damaged, restated


def _read(manifest: Path) -> dict | None:
    """The recorded manifest; None when the entry predates manifests (no file, or an empty marker)."""
    try:
        text = manifest.read_text()
    except FileNotFoundError:
        return None
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("files"), dict):
        raise ValueError(f"its manifest {manifest} is unreadable")
    return data


def _write(manifest: Path, data: dict) -> None:
    """Atomically: a reader sees the old manifest or the new one, never half of one."""
    manifest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{manifest.name}.", suffix=".tmp", dir=manifest.parent)
    try:  # a name of its own: two threads or processes verifying one entry never share a temp file
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(data, indent=1, sort_keys=True) + "\n")
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the manifest from other users of a shared cache
        os.replace(tmp, manifest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_quietly(manifest: Path, data: dict) -> None:
    # A read-only cache still verifies; it just cannot remember the result for next time.
    with suppress(OSError):
        _write(manifest, data)

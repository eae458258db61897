"""A result is durable before it is shared: manifest.json in the run directory first, the database second.

The run directory is where a RunResult lives first (written atomically, so it is whole or absent);
the results database is a copy for queries across runs and hosts. When the append fails (the
server went away mid-run, a full disk), the run keeps its verdict and leaves a pointer under
<artifacts>/.unrecorded/; `specops results import` or the next run's record step appends it.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from specops.atomic_file import write_text
from specops.results.compat import describe, load_record
from specops.results.model import SCHEMA_VERSION, RunResult
from specops.results.store import ResultsStore
from specops.settings import artifacts_root

log = logging.getLogger(__name__)


class ManifestError(ValueError):
    """A manifest that cannot be read as a RunResult; the message names the file."""


class NewerManifest(ManifestError):
    """A manifest a newer specops wrote: that version imports it, so its pending pointer stays."""


def _newer(manifest: Path, data: dict) -> NewerManifest:
    software = data.get("software") if isinstance(data.get("software"), dict) else {}
    whose = f"specops {software.get('specops', '?')} (commit {str(software.get('git_commit') or '?')[:12]})"
    return NewerManifest(f"{manifest} was written by a newer specops, {whose}, record schema "
                         f"{data.get('schema_version')} (this one writes {SCHEMA_VERSION}): import it with that "
                         "version")


MANIFEST = "manifest.json"  # the whole RunResult: what produced the run and what it measured
# What report.writer writes into a run's directory beside it (and `specops plan` promises)
REPORT_MD, COMPARISON_CSV, PLOT_PNG = "report.md", "comparison.csv", "comparison.png"
REPORT_NAMES = (REPORT_MD, COMPARISON_CSV, PLOT_PNG, MANIFEST)


def save_result(result: RunResult, run_path: Path) -> Path:
    return write_text(Path(run_path) / MANIFEST, json.dumps(result.model_dump(mode="json"), indent=2,
                                                            sort_keys=True) + "\n")


def read_result(manifest: Path) -> RunResult:
    """A manifest as a RunResult (by the schema policy of results/compat.py)."""
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ManifestError(f"{manifest}: not a readable run manifest ({exc})") from None
    loaded = load_record(data)
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(version, int) and version > SCHEMA_VERSION:  # its row would lose the fields this version drops
        raise _newer(manifest, data)
    if loaded.result is None:
        raise ManifestError(f"{manifest}: {describe(data)} cannot be read by this specops: {loaded.problem}")
    return loaded.result


def _pending_dir() -> Path:
    return artifacts_root() / ".unrecorded"


def mark_unrecorded(result: RunResult, why: str) -> Path:
    """Remember a result the database did not take: its uid names a pointer to its run directory."""
    return write_text(_pending_dir() / f"{result.uid}.json",
                      json.dumps({"run_dir": result.run_dir, "run_id": result.run_id, "why": why}) + "\n")


def _pointers() -> list[tuple[Path, Path]]:
    """(pointer, run directory) of each result on disk but not in the database, oldest pointer first."""
    if not _pending_dir().is_dir():
        return []
    out = []
    for pointer in sorted(_pending_dir().glob("*.json"), key=lambda p: p.stat().st_mtime):
        try:
            out.append((pointer, Path(json.loads(pointer.read_text())["run_dir"])))
        except (OSError, ValueError, KeyError):
            log.warning("ignoring %s: not a pointer to a run directory", pointer)
    return out


def unrecorded() -> list[Path]:
    """Run directories whose result is on disk but not in the database (oldest pointer first)."""
    return [run_dir for _, run_dir in _pointers()]


def is_unrecorded(uid: str) -> bool:
    return (_pending_dir() / f"{uid}.json").exists()


def clear_unrecorded(uid: str) -> None:
    (_pending_dir() / f"{uid}.json").unlink(missing_ok=True)


@dataclass(frozen=True)
class Imported:
    run_dir: Path
    result: RunResult


def manifests(paths: Iterable[Path]) -> list[Path]:
    """The manifests in these run directories (a sweep's or a root's: every one below them)."""
    found: list[Path] = []
    for path in paths:
        path = Path(path)
        if not path.is_dir():
            raise ManifestError(f"{path}: not a directory; give run directories (artifacts/<profile>/<run-id>)")
        inside = sorted(path.rglob(MANIFEST))
        if not inside:
            raise ManifestError(f"{path}: no {MANIFEST} in it or below it; a run that ended writes one "
                               "(a run killed before its report has no result to import)")
        found.extend(inside)
    return found


def import_results(store: ResultsStore, run_dirs: Iterable[Path]) -> list[Imported]:
    """Append the results kept in these run directories; appending a uid again replaces its row."""
    done: list[Imported] = []
    for manifest in manifests(run_dirs):
        try:
            result = read_result(manifest)
        except ManifestError as err:  # what went in before it stays in: say so, or a rerun looks like the first
            if done:
                err.args = (f"{err} (recorded before it: " + ", ".join(str(i.run_dir) for i in done) + ")",)
            raise
        store.append(result)
        clear_unrecorded(result.uid)
        done.append(Imported(manifest.parent, result))
    return done


def import_unrecorded(store: ResultsStore, left: list[str] | None = None) -> list[Imported]:
    """Results earlier runs could not record. A pointer to a newer specops' manifest stays for that version (why
    appended to `left`); one whose run directory is gone or damaged is dropped."""
    done = []
    for pointer, run_dir in _pointers():
        try:
            done.extend(import_results(store, [run_dir]))
        except NewerManifest as exc:
            log.warning("%s; its pointer %s stays", exc, pointer)
            if left is not None:
                left.append(str(exc))
        except ManifestError as exc:  # the run directory was removed or its manifest damaged since
            log.warning("%s; not recorded, its pointer is dropped", exc)
            pointer.unlink(missing_ok=True)
    return done

"""manifest.json: the whole RunResult in its run directory, where a result lives first."""
from __future__ import annotations

import json
from pathlib import Path

from specops.atomic_file import write_text
from specops.results.compat import describe, load_record
from specops.results.model import RunResult


class ManifestError(ValueError):
    """A manifest that cannot be read as a RunResult; the message names the file."""


MANIFEST = "manifest.json"  # the whole RunResult: what produced the run and what it measured


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
    if loaded.result is None:
        raise ManifestError(f"{manifest}: {describe(data)} cannot be read by this specops: {loaded.problem}")
    return loaded.result

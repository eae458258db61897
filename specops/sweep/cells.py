"""Measured sweep cells kept on disk, so that a sweep run again measures only what is missing.

A cell is its RunResult (the speculative variant and the base measured beside it), under <cache>/sweeps/, named by
specops.sweep.grid.cell_key, written whole with its sha256 and verified on every read (specops/sources/json_entry.py):
a damaged one is named, moved aside and measured again, never taken for a measurement.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from specops.results.model import RunResult
from specops.sources.json_entry import read_entry, write_entry


class CellStore:
    def __init__(self, root: Path):
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / f"{key}.cell.json"

    def result(self, key: str, say: Callable[[str], None] = print) -> RunResult | None:
        content = read_entry(self.path(key), lambda content: None, say)
        if content is None:
            return None  # missing, or damaged (said and moved aside): measure it again
        try:
            return RunResult.model_validate(content)
        except ValidationError:  # whole, but written by another specops version: measure it again
            return None

    def put_result(self, key: str, result: RunResult) -> None:
        write_entry(self.path(key), result.model_dump(mode="json"))

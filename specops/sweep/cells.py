"""Measured sweep cells kept on disk, so that a sweep run again measures only what is missing.

A cell is its RunResult (the speculative variant and the base measured beside it), under <cache>/sweeps/, named by
specops.sweep.grid.cell_key, written whole or not at all.
"""
from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from specops.atomic_file import write_text
from specops.results.model import RunResult


class CellStore:
    def __init__(self, root: Path):
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / f"{key}.cell.json"

    def result(self, key: str) -> RunResult | None:
        try:
            return RunResult.model_validate_json(self.path(key).read_text())
        except (FileNotFoundError, ValidationError, ValueError):  # missing, or written by another specops version
            return None  # either way: measure it again

    def put_result(self, key: str, result: RunResult) -> None:
        write_text(self.path(key), result.model_dump_json())

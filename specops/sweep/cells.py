"""Measured sweep cells kept on disk, so that a sweep run again measures only what is missing.

A speculative cell is its RunResult; a base cell is the base variant's record at one concurrency
with the base's check outputs (what each draft length's outputs are compared with). Both live under
<cache>/sweeps/, named by specops.sweep.grid.cell_key, written whole or not at all.
"""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from specops.atomic_file import write_text
from specops.results.model import RunResult, VariantRecord


class BaseCell(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    concurrency: int
    variant: VariantRecord
    outputs: list[str] = []  # the base's check outputs (greedy), for the lossless comparison
    servers: dict[str, str] = {}  # server tool -> version, as the base's server reported it


class CellStore:
    def __init__(self, root: Path):
        self.root = root

    def _path(self, key: str, kind: str) -> Path:
        return self.root / f"{key}.{kind}.json"

    def _read(self, key: str, kind: str, model: type[BaseModel]):
        try:
            return model.model_validate_json(self._path(key, kind).read_text())
        except (FileNotFoundError, ValidationError, ValueError):  # missing, or written by another specops version
            return None  # either way: measure it again

    def result(self, key: str) -> RunResult | None:
        return self._read(key, "cell", RunResult)

    def put_result(self, key: str, result: RunResult) -> None:
        write_text(self._path(key, "cell"), result.model_dump_json())

    def base(self, key: str) -> BaseCell | None:
        return self._read(key, "base", BaseCell)

    def put_base(self, key: str, cell: BaseCell) -> None:
        write_text(self._path(key, "base"), cell.model_dump_json())

"""What a training run reports: sizes, time, loss, accuracy, and where the export went."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from specops.atomic_file import write_text

RESULT_FILE = "train_result.json"  # next to the export, in the cache entry and the run directory


@dataclass
class TrainResult:
    mode: str
    export_dir: Path
    sequences: int
    tokens: int
    steps: int
    train_seconds: float
    prepare_seconds: float
    final_loss: float
    train_accuracy: dict[str, float] = field(default_factory=dict)
    acceptance: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict:
        data = asdict(self)
        data["export_dir"] = str(self.export_dir)
        return data

    def write(self, path: Path) -> None:
        write_text(path, json.dumps(self.to_json(), indent=2, sort_keys=True))

    @classmethod
    def read(cls, path: Path) -> TrainResult:
        data = json.loads(Path(path).read_text())
        data["export_dir"] = Path(data["export_dir"])
        return cls(**data)

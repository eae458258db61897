"""Lay out one Python-backend model in a Triton model repository."""
from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from specops.triton.model_config import ModelConfig, write_pbtxt

# The model file Triton runs for the embedded runtime (copied as <model>/<version>/model.py).
TRITON_MODEL_FILE = Path(__file__).resolve().parent.parent / "runtime" / "triton_model.py"


def write_python_model(repository: Path, config: ModelConfig, model_file: Path = TRITON_MODEL_FILE, version: int = 1,
                       extra_files: Iterable[Path] = ()) -> Path:
    """Write `<repository>/<name>/config.pbtxt` and `<name>/<version>/model.py`; return the model dir.

    `extra_files` are copied next to model.py (the stub puts that directory on sys.path).
    """
    model_dir = Path(repository) / config.name
    version_dir = model_dir / str(version)
    version_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model_file, version_dir / "model.py")
    for extra in extra_files:
        shutil.copyfile(extra, version_dir / Path(extra).name)
    write_pbtxt(config, model_dir)
    return model_dir

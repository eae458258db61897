"""A Triton backend directory that runs Triton's own vllm_backend on the tritonserver from nvidia-pytriton.

`<dest>/python/` holds the Python backend and the stub as copies: for a Python-based backend
(`<dest>/vllm/model.py`), Triton refuses a backend library that resolves outside the backend directory
("backend library name 'libtriton_python.so' escapes backend directory"), so the symlinks of
backend_dir.py do not do here. The copies find the wheel's bundled libraries through LD_LIBRARY_PATH
(TritonServer adds TritonDist.libs), not their $ORIGIN. `<dest>/vllm/` is upstream's `src/` as fetched
(specops.sources.backend_code), copied unchanged; `<dest>/bridges.json` is what the vLLM environment's
bridge reads (specops/triton/bridge/). Directories are content-addressed: one per (code, stub, table).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from specops.triton.backend_dir import BACKEND_LIB, BACKEND_UTILS, STUB, TritonDist

BACKEND_NAME = "vllm"  # config.pbtxt `backend: "vllm"`: Triton loads <backend-dir>/vllm/model.py
BRIDGES = "bridges.json"


def vllm_backend_dir(root: Path, dist: TritonDist, code: Path, code_sha256: str, bridges: str,
                     python_version: str | None = None) -> Path:
    """`<root>/<key>/` assembled once (atomically) and reused; returns it."""
    version = python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
    python_files = {BACKEND_LIB: dist.python_backend / BACKEND_LIB,
                    BACKEND_UTILS: dist.python_backend / BACKEND_UTILS, STUB: dist.stub(version)}
    for name, src in python_files.items():
        if not src.is_file():
            raise FileNotFoundError(f"{name} not found at {src}")
    # The copies' identity (an upgraded nvidia-pytriton gets a directory of its own), not only where they come from.
    stats = [f"{name}:{src.stat().st_size}:{src.stat().st_mtime_ns}" for name, src in sorted(python_files.items())]
    key = hashlib.sha256("\n".join([code_sha256, bridges, version, str(dist.root), *stats]).encode()).hexdigest()[:16]
    dest = Path(root) / key
    if (dest / BRIDGES).is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=dest.parent))
    try:
        (scratch / "python").mkdir()
        for name, src in python_files.items():
            shutil.copy2(src, scratch / "python" / name)
        shutil.copytree(code, scratch / BACKEND_NAME)
        (scratch / BRIDGES).write_text(bridges, encoding="utf-8")  # last: its presence marks a whole directory
        try:
            os.rename(scratch, dest)
        except OSError:
            if not (dest / BRIDGES).is_file():  # not a concurrent assembler's finished directory
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return dest

"""Our own Triton backend directory with the Python backend and the stub for this interpreter.

The nvidia-pytriton wheel ships the Python backend without a stub where tritonserver looks
(`<backend-dir>/python/triton_python_backend_stub`); the stubs live per Python version in
`python_backend_stubs/3.X/`. We assemble `<root>/<key>/python/` with symlinks into the wheel and never
write into site-packages. The key names the wheel and the interpreter the links point at: venvs that share
one cache (a CLI run beside `make up`'s worker, two checkouts) each get a directory of their own, so no run
re-points the links under another venv's running server.
"""
from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

STUB = "triton_python_backend_stub"
BACKEND_LIB = "libtriton_python.so"
BACKEND_UTILS = "triton_python_backend_utils.py"


@dataclass(frozen=True)
class TritonDist:
    """Where the tritonserver distribution inside the nvidia-pytriton wheel lives."""

    root: Path  # .../site-packages/pytriton/tritonserver

    @property
    def binary(self) -> Path:
        return self.root / "bin" / "tritonserver"

    @property
    def python_backend(self) -> Path:
        return self.root / "backends" / "python"

    @property
    def libs(self) -> Path:
        """The wheel's bundled shared libraries (libtritonserver, libarchive, ...)."""
        return self.root.parent.parent / "nvidia_pytriton.libs"

    def stub(self, python_version: str | None = None) -> Path:
        version = python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
        return self.root / "python_backend_stubs" / version / STUB


def triton_dist() -> TritonDist:
    """Locate the tritonserver distribution of the installed nvidia-pytriton wheel."""
    import pytriton  # noqa: PLC0415 - located lazily, only this module needs it

    root = Path(pytriton.__file__).resolve().parent / "tritonserver"
    if not (root / "bin" / "tritonserver").is_file():
        raise FileNotFoundError(f"no tritonserver binary under {root} (nvidia-pytriton installed?)")
    return TritonDist(root)


def backend_dir_for(root: Path, dist: TritonDist, python_version: str | None = None) -> Path:
    """`<root>/py3.X-<hash of the wheel's path>`: the backend directory of this venv's wheel and interpreter."""
    version = python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
    digest = hashlib.sha256(f"{dist.root}\n{version}".encode()).hexdigest()[:12]
    return Path(root) / f"py{version}-{digest}"


def assemble_backend_dir(root: Path, dist: TritonDist | None = None) -> Path:
    """Create (or refresh) `<root>/<key>/python/` with the Python backend (key: backend_dir_for); return
    `<root>/<key>`, the directory to give tritonserver.

    Idempotent: correct links are left alone, wrong ones (a directory damaged by hand) replaced.
    """
    dist = dist or triton_dist()
    dest = backend_dir_for(root, dist)
    sources = {
        BACKEND_LIB: dist.python_backend / BACKEND_LIB,
        BACKEND_UTILS: dist.python_backend / BACKEND_UTILS,
        STUB: dist.stub(),
    }
    for name, src in sources.items():
        if not src.is_file():
            raise FileNotFoundError(f"{name} not found at {src}")
    python_dir = dest / "python"
    python_dir.mkdir(parents=True, exist_ok=True)
    for name, src in sources.items():
        _link(python_dir / name, src)
    return dest


def _link(link: Path, target: Path) -> None:
    if link.is_symlink() and Path(os.readlink(link)) == target:
        return
    if link.exists() or link.is_symlink():
        log.warning("replacing %s (was not a link to %s)", link, target)
        link.unlink()
    tmp = link.with_name(f".{link.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # servers start side by side
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    tmp.replace(link)  # atomic: a concurrent assembler never sees a missing file

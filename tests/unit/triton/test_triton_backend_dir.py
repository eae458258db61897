"""Our own Python backend directory: links into the wheel, the stub for this interpreter."""
import os
import sys

import pytest

from specops.triton.backend_dir import BACKEND_LIB, BACKEND_UTILS, STUB, TritonDist, assemble_backend_dir, triton_dist


def test_dist_is_the_installed_wheel():
    dist = triton_dist()
    assert dist.binary.is_file() and os.access(dist.binary, os.X_OK)
    assert dist.stub().parent.name == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert (dist.libs / "").is_dir()


def test_assemble_links_the_three_files(tmp_path):
    dist = triton_dist()
    dest = assemble_backend_dir(tmp_path / "backends")
    python_dir = dest / "python"
    assert sorted(p.name for p in python_dir.iterdir()) == sorted([BACKEND_LIB, BACKEND_UTILS, STUB])
    assert (python_dir / STUB).resolve() == dist.stub().resolve()
    assert (python_dir / BACKEND_LIB).resolve() == (dist.python_backend / BACKEND_LIB).resolve()
    assert os.access(python_dir / STUB, os.X_OK)
    assert not any(p.is_relative_to(dist.root) for p in python_dir.iterdir())  # nothing written into the wheel


def test_assemble_is_idempotent_and_repairs(tmp_path):
    dest = assemble_backend_dir(tmp_path / "b")
    stub = dest / "python" / STUB
    before = os.lstat(stub).st_ino
    assemble_backend_dir(tmp_path / "b")
    assert os.lstat(stub).st_ino == before  # untouched
    stub.unlink()
    stub.write_text("stale copy")
    assemble_backend_dir(tmp_path / "b")
    assert stub.is_symlink() and stub.resolve() == triton_dist().stub().resolve()


def test_missing_stub_is_reported(tmp_path):
    fake_root = tmp_path / "pytriton" / "tritonserver"
    (fake_root / "backends" / "python").mkdir(parents=True)
    (fake_root / "backends" / "python" / BACKEND_LIB).write_bytes(b"")
    (fake_root / "backends" / "python" / BACKEND_UTILS).write_text("")
    with pytest.raises(FileNotFoundError, match=STUB):
        assemble_backend_dir(tmp_path / "out", TritonDist(fake_root))

"""Our own Python backend directory: links into the wheel, the stub for this interpreter."""
import os
import sys

import pytest

from specops.triton.backend_dir import (
    BACKEND_LIB,
    BACKEND_UTILS,
    STUB,
    TritonDist,
    assemble_backend_dir,
    backend_dir_for,
    triton_dist,
)


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


def fake_dist(root):
    """A stand-in for another venv's nvidia-pytriton wheel: the three files where TritonDist looks."""
    dist = TritonDist(root / "pytriton" / "tritonserver")
    dist.python_backend.mkdir(parents=True)
    (dist.python_backend / BACKEND_LIB).write_bytes(b"")
    (dist.python_backend / BACKEND_UTILS).write_text("")
    dist.stub().parent.mkdir(parents=True)
    dist.stub().write_bytes(b"")
    return dist


def test_two_venvs_share_one_cache_without_repointing_each_other(tmp_path):
    """A CLI run beside `make up`'s worker, each from its own venv, in one cache: each venv's server keeps
    links to its own wheel, whoever assembled last."""
    cache = tmp_path / "cache" / "triton-backends"
    venv_a, venv_b = fake_dist(tmp_path / "venv-a"), fake_dist(tmp_path / "venv-b")
    dir_a = assemble_backend_dir(cache, venv_a)
    stub_a = os.lstat(dir_a / "python" / STUB).st_ino
    dir_b = assemble_backend_dir(cache, venv_b)
    assert dir_a != dir_b and dir_a.parent == dir_b.parent == cache
    assert assemble_backend_dir(cache, venv_a) == dir_a  # the same venv finds its own directory again
    for dest, dist in ((dir_a, venv_a), (dir_b, venv_b)):
        assert (dest / "python" / STUB).resolve() == dist.stub().resolve()
        assert (dest / "python" / BACKEND_LIB).resolve() == (dist.python_backend / BACKEND_LIB).resolve()
    assert os.lstat(dir_a / "python" / STUB).st_ino == stub_a  # venv B's assembly left A's links alone
    assert dir_a.name.startswith(f"py{sys.version_info.major}.{sys.version_info.minor}-")
    assert backend_dir_for(cache, venv_a, "3.12") != dir_a  # another interpreter of one wheel: its own too


def test_missing_stub_is_reported(tmp_path):
    fake_root = tmp_path / "pytriton" / "tritonserver"
    (fake_root / "backends" / "python").mkdir(parents=True)
    (fake_root / "backends" / "python" / BACKEND_LIB).write_bytes(b"")
    (fake_root / "backends" / "python" / BACKEND_UTILS).write_text("")
    with pytest.raises(FileNotFoundError, match=STUB):
        assemble_backend_dir(tmp_path / "out", TritonDist(fake_root))

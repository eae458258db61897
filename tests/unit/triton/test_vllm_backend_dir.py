"""specops.triton.vllm_backend_dir: the backend directory that runs Triton's vllm_backend on nvidia-pytriton's
tritonserver - copies (Triton refuses a backend library that resolves outside the backend directory), the code's
src/ as vllm/, and bridges.json; content-addressed and reused.

Uses the installed nvidia-pytriton wheel and the vllm_backend reference copy (main 8de0c14) as the code.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from specops.backends.vllm import cpu as vllm_cpu
from specops.sources.schemes import hash_dir
from specops.triton.backend_dir import BACKEND_LIB, BACKEND_UTILS, STUB, TritonDist, triton_dist
from specops.triton.vllm_backend_dir import BACKEND_NAME, BRIDGES, vllm_backend_dir
from tests.reference import REFERENCE

CODE = REFERENCE / "vllm_backend" / "src"

pytestmark = pytest.mark.skipif(not (CODE / "model.py").is_file(), reason=f"no vllm_backend reference copy at {CODE}")


@pytest.fixture(scope="module")
def dist() -> TritonDist:
    return triton_dist()


@pytest.fixture(scope="module")
def code_sha() -> str:
    return hash_dir(CODE)


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_directory_holds_copies_the_code_and_the_bridges(tmp_path, dist, code_sha):
    bridges = vllm_cpu.bridge_table()
    dest = vllm_backend_dir(tmp_path / "backends", dist, CODE, code_sha, bridges)
    assert dest.parent == tmp_path / "backends"
    assert sorted(p.name for p in dest.iterdir()) == sorted(["python", BACKEND_NAME, BRIDGES])
    # python/: the Python backend and the stub for this interpreter, as files of their own
    sources = {BACKEND_LIB: dist.python_backend / BACKEND_LIB, BACKEND_UTILS: dist.python_backend / BACKEND_UTILS,
               STUB: dist.stub()}
    assert sorted(p.name for p in (dest / "python").iterdir()) == sorted(sources)
    for name, src in sources.items():
        copy = dest / "python" / name
        assert not copy.is_symlink() and copy.is_file()
        assert copy.read_bytes() == src.read_bytes()
        assert copy.stat().st_ino != src.stat().st_ino  # a copy, not a hard link into the wheel
    assert os.access(dest / "python" / STUB, os.X_OK)
    # vllm/: the code's src/ unchanged (Triton loads <backend-dir>/vllm/model.py)
    assert files_of(dest / BACKEND_NAME) == files_of(CODE)
    # nothing anywhere in it is a symlink (Triton: "escapes backend directory")
    assert not [p for p in dest.rglob("*") if p.is_symlink()]
    # bridges.json: the table the vLLM environment's bridge reads
    assert (dest / BRIDGES).read_text(encoding="utf-8") == bridges
    rows = json.loads((dest / BRIDGES).read_text())
    assert {(r["module"], r["name"]) for r in rows} == {(r["module"], r["name"])
                                                         for r in vllm_cpu.facts()["triton_backend_bridges"]}
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".tmp-")]  # no scratch left


def test_a_second_call_reuses_the_directory(tmp_path, dist, code_sha):
    bridges = vllm_cpu.bridge_table()
    first = vllm_backend_dir(tmp_path, dist, CODE, code_sha, bridges)
    (first / BACKEND_NAME / "marker-of-the-first-build").write_text("x")
    stamp = {p: p.stat().st_mtime_ns for p in first.rglob("*")}
    second = vllm_backend_dir(tmp_path, dist, CODE, code_sha, bridges)
    assert second == first
    assert (second / BACKEND_NAME / "marker-of-the-first-build").exists()  # not rebuilt
    assert all(p.stat().st_mtime_ns == t for p, t in stamp.items())
    assert [p.name for p in tmp_path.iterdir()] == [first.name]


def test_other_bridges_code_or_python_give_another_directory(tmp_path, dist, code_sha):
    bridges = vllm_cpu.bridge_table()
    base = vllm_backend_dir(tmp_path, dist, CODE, code_sha, bridges)
    fewer = json.dumps(json.loads(bridges)[:1], indent=1) + "\n"
    other_bridges = vllm_backend_dir(tmp_path, dist, CODE, code_sha, fewer)
    assert other_bridges != base and (other_bridges / BRIDGES).read_text() == fewer
    assert (base / BRIDGES).read_text() == bridges  # the first is left as it was
    other_code = vllm_backend_dir(tmp_path, dist, CODE, "0" * 64, bridges)
    assert other_code not in (base, other_bridges)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    other_version = next(v for v in ("3.10", "3.12", "3.11") if v != here and dist.stub(v).is_file())
    other_python = vllm_backend_dir(tmp_path, dist, CODE, code_sha, bridges, python_version=other_version)
    assert other_python not in (base, other_bridges, other_code)
    assert (other_python / "python" / STUB).read_bytes() == dist.stub(other_version).read_bytes()
    assert len(list(tmp_path.iterdir())) == 4


def test_a_missing_stub_is_reported_before_anything_is_written(tmp_path, code_sha):
    fake = tmp_path / "pytriton" / "tritonserver"
    (fake / "backends" / "python").mkdir(parents=True)
    (fake / "backends" / "python" / BACKEND_LIB).write_bytes(b"\x7fELF")
    (fake / "backends" / "python" / BACKEND_UTILS).write_text("")
    with pytest.raises(FileNotFoundError, match=STUB):
        vllm_backend_dir(tmp_path / "out", TritonDist(fake), CODE, code_sha, "[]\n")
    assert not (tmp_path / "out").exists()


def test_an_interrupted_build_leaves_no_directory_that_counts(tmp_path, dist, code_sha, monkeypatch):
    """bridges.json is written last: a build that fails before it leaves nothing a later call would reuse."""
    from specops.triton import vllm_backend_dir as module

    def failing_copytree(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(module.shutil, "copytree", failing_copytree)
    with pytest.raises(OSError, match="disk full"):
        vllm_backend_dir(tmp_path, dist, CODE, code_sha, "[]\n")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    dest = vllm_backend_dir(tmp_path, dist, CODE, code_sha, "[]\n")
    assert (dest / BRIDGES).is_file() and (dest / BACKEND_NAME / "model.py").is_file()


def fake_dist(root: Path, stub: bytes) -> TritonDist:
    """A tritonserver tree in the wheel's layout (what TritonDist reads), with a stub of the given bytes."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    (root / "backends" / "python").mkdir(parents=True, exist_ok=True)
    (root / "backends" / "python" / BACKEND_LIB).write_bytes(b"\x7fELF lib")
    (root / "backends" / "python" / BACKEND_UTILS).write_text("# utils\n")
    (root / "python_backend_stubs" / version).mkdir(parents=True, exist_ok=True)
    (root / "python_backend_stubs" / version / STUB).write_bytes(stub)
    return TritonDist(root)


def test_a_changed_stub_at_the_same_place_gives_another_directory(tmp_path, code_sha):
    dist = fake_dist(tmp_path / "pytriton" / "tritonserver", b"\x7fELF stub 0.7.0")
    first = vllm_backend_dir(tmp_path / "out", dist, CODE, code_sha, "[]\n")
    fake_dist(dist.root, b"\x7fELF stub 0.7.1")  # pip install -U nvidia-pytriton: same path, new files
    second = vllm_backend_dir(tmp_path / "out", dist, CODE, code_sha, "[]\n")
    assert second != first and (second / "python" / STUB).read_bytes() == b"\x7fELF stub 0.7.1"

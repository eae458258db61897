"""Run files are whole or absent, on a real full disk too, and the error names the file."""
from __future__ import annotations

import errno
import json
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from specops.atomic_file import RunFileError, write_figure, write_text  # noqa: E402
from specops.run.rundir import STATUS_FILE, RunDir, read_status  # noqa: E402
from tests.tmpfs import fill, small_disk  # noqa: E402


def test_a_write_replaces_the_file_whole_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "deep" / "report.md"
    write_text(target, "first")
    write_text(target, "second")
    assert target.read_text() == "second" and sorted(p.name for p in target.parent.iterdir()) == ["report.md"]


def test_the_content_is_flushed_to_disk_before_the_rename(tmp_path, monkeypatch):
    """A rename of unflushed data can leave a whole-named empty file after a power cut: fsync first."""
    import os

    from specops import atomic_file

    calls: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(src, dst):
        calls.append(("replace", str(src)))
        return real_replace(src, dst)

    monkeypatch.setattr(atomic_file.os, "fsync", fsync)
    monkeypatch.setattr(atomic_file.os, "replace", replace)
    write_text(tmp_path / "report.md", "whole")
    assert [what for what, _ in calls] == ["fsync", "replace"] and calls[0][1] == calls[1][1], calls


def test_a_full_disk_keeps_the_old_file_names_the_path_and_leaves_nothing(tmp_path):
    with small_disk(tmp_path / "disk", 64) as disk:
        target = write_text(disk / "manifest.json", "{}")
        fill(disk)
        with pytest.raises(RunFileError) as caught:
            write_text(target, "x" * 200_000)
        assert caught.value.errno == errno.ENOSPC
        assert str(caught.value) == f"cannot write {target}: No space left on device; free space on that disk"
        assert target.read_text() == "{}"  # whole: the old content, never 0 bytes
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "manifest.json"]


def test_a_figure_that_does_not_fit_leaves_no_file(tmp_path):
    with small_disk(tmp_path / "disk", 64) as disk:
        fill(disk)
        fig = plt.figure()
        with pytest.raises(RunFileError, match=rf"cannot write {disk / 'comparison.png'}: No space left"):
            write_figure(fig, disk / "comparison.png", dpi=110)
        plt.close(fig)
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]


def test_status_still_says_failed_on_a_full_disk(tmp_path):
    with small_disk(tmp_path / "disk", 64) as disk:
        run = RunDir(disk)
        run.set_status("running", "benchmark")
        fill(disk)
        run.set_status("failed", "report", None, "RunFileError: cannot write x")
        status = read_status(disk)
        assert (status["state"], status["step"]) == ("failed", "report")
        assert json.loads((disk / STATUS_FILE).read_text()) == status
        assert sorted(p.name for p in disk.iterdir()) == ["filler", STATUS_FILE]


def test_a_read_only_disk_is_named_too_not_the_temporary_file(tmp_path):
    # ext4 remounts read-only after I/O errors; there even the temporary file's cleanup fails.
    with small_disk(tmp_path / "disk", 64) as disk:
        target = write_text(disk / "report.md", "old")
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        with pytest.raises(RunFileError) as caught:
            write_text(target, "new")
        assert caught.value.errno == errno.EROFS
        assert str(caught.value) == f"cannot write {target}: Read-only file system"
        assert target.read_text() == "old"

"""Cache entries checked against the file manifest they were published with."""
from __future__ import annotations

import json
import os
import pickle
import shutil
import time

import pytest

from specops.sources import integrity
from specops.sources.integrity import CacheCorruptError, Entry, publish, verify
from specops.sources.schemes import hash_dir


def _entry(cache, rebuild="rebuilds it"):
    root = cache / "kind" / "key"
    (root / "model" / "sub").mkdir(parents=True)
    (root / "model" / "config.json").write_text('{"model_type": "llama"}')
    (root / "model" / "weights.bin").write_bytes(bytes(range(256)) * 40)
    (root / "model" / "sub" / "tokenizer.json").write_text('{"vocab": {}}')
    for file in (root / "model").rglob("*.*"):
        # Published an hour ago, like a real entry: a rewrite within the same clock tick as
        # the write would keep mtime (the case git calls "racy"), which is not what is tested.
        os.utime(file, ns=(time.time_ns() - 3600 * 10**9,) * 2)
    return Entry(root=root, content=root / "model", manifest=root / "files.json", rebuild=rebuild)


def _published(cache):
    entry = _entry(cache)
    return entry, publish(entry)


def _no_hashing(*args, **kwargs):
    raise AssertionError("hashed a file whose stat did not change")


def _quarantined(cache):
    return [p for p in (cache / "kind").iterdir() if ".corrupt-" in p.name]


def test_publish_records_hash_dir_and_every_file(tmp_path):
    entry, digest = _published(tmp_path)
    assert digest == hash_dir(entry.content)
    record = json.loads(entry.manifest.read_text())
    assert record["sha256"] == digest
    assert sorted(record["files"]) == ["config.json", "sub/tokenizer.json", "weights.bin"]
    assert record["files"]["weights.bin"]["size"] == 10240


def test_untouched_entry_passes_on_stat_alone(tmp_path, monkeypatch):
    entry, digest = _published(tmp_path)
    monkeypatch.setattr(integrity, "hash_file", _no_hashing)
    assert verify(entry) == digest
    assert entry.root.is_dir()


def _corrupt(entry, **kwargs):
    with pytest.raises(CacheCorruptError) as caught:
        verify(entry, **kwargs)
    return caught.value


def test_truncated_file_is_refused_and_the_entry_moved_aside(tmp_path):
    entry, _ = _published(tmp_path)
    with (entry.content / "weights.bin").open("r+b") as fh:
        fh.truncate(100)
    err = _corrupt(entry)
    [moved] = _quarantined(tmp_path)
    assert not entry.root.exists()
    assert (moved / "model" / "weights.bin").stat().st_size == 100  # the evidence is kept
    assert err.entry == entry.root and err.moved_to == moved
    assert err.problems == ["weights.bin: size changed (10240 -> 100 bytes)"]
    message = str(err)
    assert f"cache entry {entry.root} is corrupt: weights.bin: size changed (10240 -> 100 bytes)" in message
    assert f"moved it to {moved}" in message
    assert "Fix: run again: the next run rebuilds it" in message and f"delete {moved}" in message


def test_same_size_rewrite_is_found_by_its_content(tmp_path):
    entry, _ = _published(tmp_path)
    with (entry.content / "weights.bin").open("r+b") as fh:
        fh.seek(5000)
        fh.write(b"\xff\xff")
    err = _corrupt(entry)
    assert len(err.problems) == 1
    assert err.problems[0].startswith("weights.bin: content changed (same size, sha256 ")


def test_same_size_rewrite_with_mtime_put_back_is_found_through_ctime(tmp_path):
    entry, _ = _published(tmp_path)
    weights = entry.content / "weights.bin"
    before = weights.stat()
    time.sleep(0.05)  # past the filesystem clock's tick, so the change time moves
    weights.write_bytes(b"\x00" * before.st_size)
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))  # what touch -r / cp -p do
    assert weights.stat().st_mtime_ns == before.st_mtime_ns
    assert _corrupt(entry).problems[0].startswith("weights.bin: content changed")


def test_deleted_and_added_files_are_named(tmp_path):
    entry, _ = _published(tmp_path)
    (entry.content / "sub" / "tokenizer.json").unlink()
    (entry.content / "extra.safetensors").write_bytes(b"x")
    assert _corrupt(entry).problems == ["sub/tokenizer.json: missing",
                                        "extra.safetensors: not in the entry when it was published"]


def test_same_bytes_with_new_stat_pass_and_are_remembered(tmp_path, monkeypatch):
    entry, digest = _published(tmp_path)
    copy = tmp_path / "kind" / "copy"
    shutil.copytree(entry.root, copy)  # a copied cache: new inodes and ctimes, same bytes
    moved = Entry(root=copy, content=copy / "model", manifest=copy / "files.json",
                  rebuild="x")
    assert verify(moved) == digest
    monkeypatch.setattr(integrity, "hash_file", _no_hashing)
    assert verify(moved) == digest  # the new stat was recorded: cheap again


def test_entry_published_before_manifests_is_hashed_once_against_its_recorded_hash(tmp_path, monkeypatch):
    entry = _entry(tmp_path)
    digest = hash_dir(entry.content)
    assert verify(entry, expected=digest) == digest
    assert json.loads(entry.manifest.read_text())["sha256"] == digest
    monkeypatch.setattr(integrity, "hash_file", _no_hashing)
    assert verify(entry, expected=digest) == digest


def test_entry_published_before_manifests_with_other_bytes_is_corrupt(tmp_path):
    entry = _entry(tmp_path)
    err = _corrupt(entry, expected="d" * 64)
    assert err.problems == [f"content hash {hash_dir(_quarantined(tmp_path)[0] / 'model')[:12]} differs from "
                            f"the dddddddddddd it was published with"]


def test_entry_without_any_record_is_trusted_once_and_recorded(tmp_path):
    entry = _entry(tmp_path)
    assert verify(entry) == hash_dir(entry.content)
    assert entry.manifest.is_file()


def test_unreadable_manifest_is_corrupt(tmp_path):
    entry, _ = _published(tmp_path)
    entry.manifest.write_text("{not json")
    assert _corrupt(entry).problems == [f"its manifest {entry.manifest} is unreadable"]


def test_manifest_kept_inside_the_content_is_not_content(tmp_path, monkeypatch):
    root = tmp_path / "repos" / "key"
    (root / "base" / "1").mkdir(parents=True)
    (root / "base" / "config.pbtxt").write_text('name: "base"')
    entry = Entry(root=root, content=root, manifest=root / ".complete", rebuild="x",
                  exclude=frozenset({".complete"}))
    digest = publish(entry)
    assert sorted(json.loads((root / ".complete").read_text())["files"]) == ["base/config.pbtxt"]
    monkeypatch.setattr(integrity, "hash_file", _no_hashing)
    assert verify(entry) == digest


def test_an_entry_that_cannot_be_moved_is_named_with_the_manual_fix(tmp_path):
    entry, _ = _published(tmp_path)
    (entry.content / "config.json").write_text("{}")

    def refuse(entry, damaged):
        raise PermissionError("read-only file system")

    with pytest.raises(CacheCorruptError) as caught:
        verify(entry, move_aside=refuse)
    assert "could not move it aside (read-only file system)" in str(caught.value)
    assert str(caught.value).endswith(f"Fix: delete {entry.root} and run again: the next run rebuilds it")
    assert entry.root.is_dir()


def test_the_error_survives_pickling(tmp_path):
    """Prefect stores a failed task's exception; the message must come back whole."""
    entry, _ = _published(tmp_path)
    (entry.content / "config.json").unlink()
    err = _corrupt(entry)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is CacheCorruptError and str(again) == str(err) and again.moved_to == err.moved_to


# rename_into_place: a writer publishes a finished scratch sibling as the entry in one rename.

def _scratch(parent, who):
    scratch = parent / f".scratch-{who}"
    (scratch / "model").mkdir(parents=True)
    (scratch / "model" / "weights.bin").write_text(who)
    (scratch / "COMPLETE").write_text(who)  # written last, before the rename: what makes it published
    return scratch


def _is_published(directory):
    return (directory / "COMPLETE").is_file()


def _leftover(dest):
    (dest / "model").mkdir(parents=True)  # an older layout wrote in place and crashed: never published
    (dest / "model" / "weights.bin").write_text("half")


def test_rename_into_place_replaces_a_leftover_and_keeps_a_published_entry(tmp_path):
    dest = tmp_path / "entry"
    _leftover(dest)
    assert integrity.rename_into_place(_scratch(tmp_path, "a"), dest, _is_published)
    assert (dest / "COMPLETE").read_text() == "a" and (dest / "model" / "weights.bin").read_text() == "a"
    late = _scratch(tmp_path, "b")
    assert not integrity.rename_into_place(late, dest, _is_published)
    assert (dest / "COMPLETE").read_text() == "a" and late.is_dir()  # left for the caller to remove
    shutil.rmtree(late)
    assert [p.name for p in tmp_path.iterdir()] == ["entry"]  # the leftover went, nothing parked beside it


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("call", [1, 2, 3, 4])
def test_an_entry_another_writer_publishes_meanwhile_is_never_deleted(tmp_path, call, when):
    """Another writer publishes the entry at any point of ours (just before or just after our
    `call`-th look): its entry stays at dest, the very directory it renamed there."""
    dest, trash = tmp_path / "entry", tmp_path / "trash"
    _leftover(dest)
    trash.mkdir()
    theirs = _scratch(tmp_path, "theirs")
    their_inode = theirs.stat().st_ino
    looks = []

    def other_writer_publishes():  # what its own rename_into_place does: leftover out, entry in
        if dest.exists() and not _is_published(dest):
            os.rename(dest, trash / "leftover")
        if not dest.exists():
            os.rename(theirs, dest)

    def published(path):
        looks.append(path)
        if when == "before" and len(looks) == call:
            other_writer_publishes()
        seen = _is_published(path)
        if when == "after" and len(looks) == call:
            other_writer_publishes()
        return seen

    won = integrity.rename_into_place(_scratch(tmp_path, "ours"), dest, published)
    if theirs.exists():  # it came too late: ours was in place, so it kept its scratch
        assert won and (dest / "COMPLETE").read_text() == "ours"
    else:
        assert not won and dest.stat().st_ino == their_inode
        assert (dest / "model" / "weights.bin").read_text() == "theirs"
    assert not [p.name for p in tmp_path.iterdir() if ".leftover-" in p.name]


# One writer process: waits for the start file, publishes its scratch, prints whether it won.
WRITER = """
import sys, time
from pathlib import Path
from specops.sources.integrity import rename_into_place
scratch, dest, go = map(Path, sys.argv[1:4])
while not go.exists():
    time.sleep(0.001)
print(rename_into_place(scratch, dest, lambda d: (d / "COMPLETE").is_file()))
"""


def test_writer_processes_racing_over_a_leftover_publish_exactly_one_entry(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).parents[3]
    for _ in range(3):
        dest, go = tmp_path / "entry", tmp_path / "go"
        _leftover(dest)
        writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(_scratch(tmp_path, f"w{i}")), str(dest), str(go)],
                                    stdout=subprocess.PIPE, text=True, cwd=root) for i in range(4)]
        go.touch()
        won = [w.communicate(timeout=60)[0].strip() for w in writers]
        assert sorted(won) == ["False", "False", "False", "True"]
        winner = f"w{won.index('True')}"
        assert (dest / "COMPLETE").read_text() == winner and (dest / "model" / "weights.bin").read_text() == winner
        assert not [p.name for p in tmp_path.iterdir() if ".leftover-" in p.name]
        for p in tmp_path.iterdir():
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()

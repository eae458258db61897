"""A result lives in its run directory first: a database that fails costs only the append, never the result."""
from __future__ import annotations

import json

import pytest

from specops.results import durable
from specops.results.durable import MANIFEST, ManifestError, read_result, save_result
from specops.results.model import SCHEMA_VERSION
from specops.results.store import ResultsStore
from tests.results_factory import run_result


@pytest.fixture
def artifacts(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))
    return tmp_path / "artifacts"


@pytest.fixture
def store(tmp_path):
    with ResultsStore.open(f"sqlite:///{tmp_path / 'results.db'}") as opened:
        yield opened


def _kept(artifacts, run_id, **kw):
    result = run_result(run_id=run_id, **kw)
    run_dir = artifacts / result.profile / run_id
    result = result.model_copy(update={"run_dir": str(run_dir)})
    save_result(result, run_dir)
    return result, run_dir


def test_the_manifest_round_trips_and_leaves_no_temporary_file(artifacts):
    result, run_dir = _kept(artifacts, "r1")
    assert read_result(run_dir / MANIFEST) == result
    assert [p.name for p in run_dir.iterdir()] == [MANIFEST]


def test_an_unrecorded_result_is_imported_by_the_next_run_and_its_pointer_goes(artifacts, store):
    first, first_dir = _kept(artifacts, "db-was-down")
    durable.mark_unrecorded(first, "could not record: connection refused")
    assert durable.is_unrecorded(first.uid) and durable.unrecorded() == [first_dir]
    assert store.history() == []
    imported = durable.import_unrecorded(store)
    assert [(i.run_dir, i.result.uid) for i in imported] == [(first_dir, first.uid)]
    assert [r.uid for r in store.history()] == [first.uid]
    assert not durable.is_unrecorded(first.uid) and durable.import_unrecorded(store) == []


def test_import_takes_a_sweep_directory_whole_and_is_idempotent(artifacts, store):
    cells = [_kept(artifacts / "sweep-1", f"k{k}", started_at=1000.0 + k)[0] for k in (1, 2)]
    for _ in range(2):  # importing again replaces the rows, it does not duplicate them
        assert len(durable.import_results(store, [artifacts / "sweep-1"])) == 2
    assert sorted(r.uid for r in store.history()) == sorted(c.uid for c in cells)


def test_import_refuses_a_directory_without_a_result_naming_it(artifacts, store, tmp_path):
    empty = tmp_path / "killed-run"
    empty.mkdir()
    with pytest.raises(ManifestError, match=rf"{empty}: no manifest.json in it or below it"):
        durable.import_results(store, [empty])
    with pytest.raises(ManifestError, match="not a directory"):
        durable.import_results(store, [tmp_path / "nowhere"])


def test_a_pointer_whose_run_directory_is_gone_is_dropped_not_fatal(artifacts, store):
    gone, gone_dir = _kept(artifacts, "removed")
    durable.mark_unrecorded(gone, "down")
    kept, _ = _kept(artifacts, "kept")
    durable.mark_unrecorded(kept, "down")
    (gone_dir / MANIFEST).unlink()
    gone_dir.rmdir()
    assert [i.result.uid for i in durable.import_unrecorded(store)] == [kept.uid]
    assert durable.unrecorded() == []


def test_a_manifest_written_by_a_newer_specops_is_left_for_that_version_to_import(artifacts, store):
    _, run_dir = _kept(artifacts, "from-the-future")
    data = json.loads((run_dir / MANIFEST).read_text())
    (run_dir / MANIFEST).write_text(json.dumps(data | {"schema_version": SCHEMA_VERSION + 1, "later": 1}))
    newer = rf"newer specops, specops .*record schema {SCHEMA_VERSION + 1} .*import it with that"
    with pytest.raises(ManifestError, match=newer):
        durable.import_results(store, [run_dir])
    assert store.history() == []


def test_a_pending_result_of_a_newer_specops_stays_pending_and_import_says_whose(artifacts, store, capsys):
    older, _ = _kept(artifacts, "ours")
    durable.mark_unrecorded(older, "down")
    newer, run_dir = _kept(artifacts, "from-the-future")
    durable.mark_unrecorded(newer, "down")
    data = json.loads((run_dir / MANIFEST).read_text())
    data["software"]["specops"] = "9.9.9"
    (run_dir / MANIFEST).write_text(json.dumps(data | {"schema_version": SCHEMA_VERSION + 1, "later": 1}))
    left: list[str] = []
    assert [i.result.uid for i in durable.import_unrecorded(store, left)] == [older.uid]
    assert durable.unrecorded() == [run_dir] and durable.is_unrecorded(newer.uid)  # kept for that version
    assert len(left) == 1 and "specops 9.9.9" in left[0] and str(run_dir) in left[0]
    assert durable.import_unrecorded(store) == [] and durable.is_unrecorded(newer.uid)  # still kept, run after run


def test_results_import_names_what_it_leaves_for_a_newer_specops(artifacts, tmp_path, monkeypatch, capsys):
    from argparse import Namespace

    from cli.history import cmd_results_import

    monkeypatch.setenv("SPECOPS_RESULTS_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    newer, run_dir = _kept(artifacts, "from-the-future")
    durable.mark_unrecorded(newer, "down")
    data = json.loads((run_dir / MANIFEST).read_text())
    (run_dir / MANIFEST).write_text(json.dumps(data | {"schema_version": SCHEMA_VERSION + 1}))
    assert cmd_results_import(Namespace(run_dirs=[])) == 0
    out = capsys.readouterr().out
    assert f"left pending: {run_dir / MANIFEST} was written by a newer specops" in out
    assert "nothing recorded: 1 pending result(s) left for a newer specops" in out
    assert durable.is_unrecorded(newer.uid)


def test_a_damaged_manifest_names_what_was_recorded_before_it(artifacts, store):
    _kept(artifacts, "a-good")
    _, bad = _kept(artifacts, "b-damaged")
    (bad / MANIFEST).write_text("{not json")
    with pytest.raises(ManifestError, match=r"b-damaged/manifest.json: not a readable run manifest .*"
                                            r"\(recorded before it: .*a-good\)"):
        durable.import_results(store, [artifacts])
    assert [r.run_id for r in store.history()] == ["a-good"]

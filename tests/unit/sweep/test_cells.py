"""Measured cells on disk: read back whole, absent when never written, and a record another specops
version wrote (or a torn file) is measured again rather than trusted."""
from __future__ import annotations

from specops.sweep.cells import CellStore
from tests.results_factory import run_result


def test_a_kept_cell_reads_back_and_an_unknown_one_is_absent(tmp_path):
    store = CellStore(tmp_path / "sweeps")
    result = run_result()
    assert store.result("k") is None
    store.put_result("k", result)
    assert store.result("k") == result and store.result("j") is None
    assert sorted(p.name for p in (tmp_path / "sweeps").iterdir()) == ["k.cell.json"]  # no tmp left


def test_an_unreadable_cell_is_measured_again(tmp_path):
    store = CellStore(tmp_path)
    (tmp_path / "k.cell.json").write_text('{"uid": "torn')
    (tmp_path / "j.cell.json").write_text(run_result().model_dump_json()[:-1] + ', "future_field": 1}')
    assert store.result("k") is None and store.result("j") is None

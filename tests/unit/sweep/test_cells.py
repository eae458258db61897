"""Measured cells on disk: read back whole, absent when never written; a damaged one (torn, edited, written by hand)
is named, moved aside and measured again rather than trusted (issue 51), and one another specops version wrote
whole is measured again, left where it is."""
from __future__ import annotations

import json

import pytest

from specops.sources.json_entry import write_entry
from specops.sweep.cells import CellStore
from tests.results_factory import run_result


def test_a_kept_cell_reads_back_and_an_unknown_one_is_absent(tmp_path):
    store = CellStore(tmp_path / "sweeps")
    result = run_result()
    assert store.result("k") is None
    store.put_result("k", result)
    assert store.result("k") == result and store.result("j") is None
    assert sorted(p.name for p in (tmp_path / "sweeps").iterdir()) == ["k.cell.json"]  # no tmp left


def _edited(text: str) -> str:
    cell = json.loads(text)
    cell["speedup"]["point"] *= 2  # a faster cell than was measured
    return json.dumps(cell)


@pytest.mark.parametrize("damage", [lambda text: text[: len(text) // 2], _edited,
                                    lambda text: run_result().model_dump_json()], ids=["torn", "edited", "by-hand"])
def test_a_damaged_cell_is_named_moved_aside_and_measured_again(tmp_path, damage):
    store = CellStore(tmp_path)
    store.put_result("k", run_result())
    damaged = damage(store.path("k").read_text())
    store.path("k").write_text(damaged)
    said: list[str] = []
    assert store.result("k", said.append) is None
    assert len(said) == 1 and said[0].startswith(f"cache entry {store.path('k')} is damaged: "), said
    (moved,) = tmp_path.glob("k.cell.json.corrupt-*")
    assert moved.read_text() == damaged and not store.path("k").exists()


def test_a_cell_another_specops_version_wrote_whole_is_measured_again_and_left(tmp_path):
    store = CellStore(tmp_path)
    write_entry(store.path("j"), {**run_result().model_dump(mode="json"), "future_field": 1})
    said: list[str] = []
    assert store.result("j", said.append) is None and said == [] and store.path("j").exists()

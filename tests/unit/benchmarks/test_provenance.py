"""benchmarks/provenance.py: a benchmark's figures written as data with their date, host, commit and command, and
rendered with them and their age."""
from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
import provenance  # noqa: E402 - benchmarks/ is a folder of scripts (each imports it as a sibling), not a package


def test_a_recorded_figure_renders_with_its_provenance_and_age(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / "engine_bench.py"), "--set", "x=1"])
    path = provenance.record("probe", "A probe", ["| a | b |", "|---|---|", "| 1 | 2 |"], str(tmp_path / "p.json"))
    data = json.loads(path.read_text())
    assert data["command"] == ".venv/bin/python benchmarks/engine_bench.py --set x=1"
    assert data["host"].endswith("cores)") and data["commit"] and data["figures"][2] == "| 1 | 2 |"
    measured = date.fromisoformat(data["measured"][:10])
    later = measured.replace(year=measured.year + 1)
    shown = provenance.render(path, later)
    assert f"Measured {measured:%Y-%m-%d}, {(later - measured).days} days before this page was built" in shown
    assert data["host"] in shown and data["commit"] in shown and data["command"] in shown and "| 1 | 2 |" in shown
    assert "the day this page was built" in provenance.render(path, measured)
    assert provenance.record("probe", "A probe", [], "-") is None

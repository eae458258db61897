"""The Floors contract in pyproject.toml (import-linter, run by `make test`) bounds how deep the imports between
folders go only for the folders it names: every package and loose module of the project must stand on one of its
floors, and there are at most twelve (issue 52)."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_FLOORS = 12
CONTRACT = "Floors:"


def floors() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["name"].startswith(CONTRACT))
    assert contract["type"] == "layers"
    return [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]


def rooms(specops: Path = ROOT / "specops") -> set[str]:
    """Each folder of specops/ and each module at its root, as dotted names; the other top folders whole."""
    names = {f"specops.{p.stem if p.is_file() else p.name}" for p in specops.iterdir()
             if (p.is_dir() and any(p.rglob("*.py"))) or (p.suffix == ".py" and p.name != "__init__.py")}
    return names | {"tools", "benchmarks", "cli", "flows", "tasks", "prefect_adapters"}


def unplaced(specops: Path = ROOT / "specops") -> set[str]:
    return rooms(specops) - {name for layer in floors() for name in layer}


def test_every_folder_stands_on_one_of_at_most_twelve_floors():
    layers = floors()
    named = [name for layer in layers for name in layer]
    assert len(layers) <= MAX_FLOORS, f"{len(layers)} floors"
    assert len(named) == len(set(named)), "a folder on two floors"
    assert "specops.host" in rooms() and "specops.settings" in rooms()  # the listing reads the tree
    missing = unplaced()
    assert not missing, f"not on any floor of the Floors contract in pyproject.toml: {sorted(missing)}"


def test_a_folder_the_contract_does_not_name_is_caught(tmp_path):
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "processes.py").write_text("")
    (tmp_path / "newroom").mkdir()
    (tmp_path / "newroom" / "thing.py").write_text("")
    (tmp_path / "loose.py").write_text("")
    assert unplaced(tmp_path) == {"specops.newroom", "specops.loose"}

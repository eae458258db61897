"""The walk of one real run through the code: which of specops' modules a `specops run` enters, in order, and how
often control moves between them and back up to a higher tier (pyproject.toml's import-linter tiers).

    .venv/bin/python tools/module_walk.py ngram-local --set benchmark.num_requests=4 ...

Every thread's function calls are profiled (Prefect runs tasks in worker threads); module bodies, run by
imports, and what they call (registrations) are loading code, not counted. Servers and benchmark tools are other
processes and are not counted. A move is a distinct (caller module, callee module) pair; an upward move calls
into a module of a higher tier than its caller's (a tier-6 utility calling back into a tier-3 pipeline step: a
callback).
Run it from the checkout to measure: it imports the code beside it, not an installed specops.
"""
from __future__ import annotations

import json
import sys
import threading
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PACKAGES = ("specops", "flows", "tasks", "prefect_adapters", "cli")


def tiers() -> dict[str, int]:
    """Module prefix -> tier (0 = entry points) from the first layers contract."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    return {name.strip(): i for i, layer in enumerate(contract["layers"]) for name in layer.split(":")}


def tier_of(module: str, table: dict[str, int]) -> int | None:
    matches = [p for p in table if module == p or module.startswith(p + ".")]
    return table[max(matches, key=len)] if matches else None


class Walk:
    def __init__(self) -> None:
        self.order: list[str] = []
        self.moves: dict[tuple[str, str], int] = {}
        self._names: dict[str, str | None] = {}

    def module(self, filename: str) -> str | None:
        if filename not in self._names:
            path = Path(filename)
            name = None
            if path.is_relative_to(ROOT) and path.suffix == ".py":
                parts = path.relative_to(ROOT).with_suffix("").parts
                if parts[0] in PACKAGES:
                    name = ".".join(p for p in parts if p != "__init__")
            self._names[filename] = name
        return self._names[filename]

    def __call__(self, frame, event, arg):
        if event != "call" or frame.f_back is None or "<module>" in (frame.f_code.co_name, frame.f_back.f_code.co_name):
            return  # an import runs a module's body (and what it calls: registrations): loading code, not the run
        callee = self.module(frame.f_code.co_filename)
        if callee is None:
            return
        if callee not in self.order:
            self.order.append(callee)
        caller = self.module(frame.f_back.f_code.co_filename)
        if caller and caller != callee:
            self.moves[(caller, callee)] = self.moves.get((caller, callee), 0) + 1


def main(argv: list[str]) -> int:
    from cli.main import main as specops

    walk = Walk()
    threading.setprofile(walk)
    sys.setprofile(walk)
    try:
        code = specops(["run", *argv])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    table = tiers()
    up = [(a, b) for a, b in walk.moves if (ta := tier_of(a, table)) is not None
          and (tb := tier_of(b, table)) is not None and tb < ta]
    print(json.dumps({"exit": code, "modules_entered": len(walk.order), "moves": len(walk.moves),
                      "upward_moves": len(up), "order": walk.order,
                      "upward": [f"{a} -> {b}" for a, b in sorted(up)],
                      "all_moves": [f"{a} -> {b}" for a, b in sorted(walk.moves)]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

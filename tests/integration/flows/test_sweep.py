"""A sweep of ngram-local (the embedded default) over K {1, 2} x concurrency {1, 2}, killed after its second cell
and run again: the second run measures only the cells the first did not keep, starting the speculative server
once per draft length still missing cells, never per cell, and the base's once, beside them. Every cell has its
95% interval: requests interleaved with the base at concurrency 1, alternating rounds (CELL_ROUNDS) at 2; the K
named per concurrency is the one the interval rule (specops.sweep.analysis.choose, unit-tested both ways on
constructed cells) gives for these cells, and the table says why."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from specops.profile.loader import load_profile
from specops.results.paired import Design
from specops.sweep.analysis import choose_k
from specops.sweep.cells import CellStore
from specops.sweep.grid import CELL_ROUNDS, cell_key
from specops.sweep.outcome import SweepOutcome
from specops.sweep.table import choice_text
from tests.integration.support import REPO_ROOT, SHARED_CACHE, processes_mentioning, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KS, CS = [1, 2], [1, 2]
URL = "http://artifacts.test:4201"
SHRINK = ["benchmark.num_requests=2", "benchmark.output_tokens=16", "benchmark.warmup_requests=0",
          "comparison.lossless_prompts=1", "comparison.lossless_max_tokens=8"]


def sweep_cmd(run_id: str) -> list[str]:
    args = [sys.executable, "-m", "cli", "sweep", "ngram-local", "--k", ",".join(map(str, KS)),
            "--concurrency", ",".join(map(str, CS)), "--run-id", run_id]
    for override in SHRINK:
        args += ["--set", override]
    return args


def test_a_killed_sweep_run_again_measures_only_the_missing_cells(embedded_model, tmp_path):
    store = CellStore(SHARED_CACHE / "sweeps")
    sha = load_profile("ngram-local", SHRINK).sha256
    keys = {(k, c): cell_key(sha, SHRINK, k, c) for k in KS for c in CS}
    for key in keys.values():  # a sweep of these settings from an earlier test session would be found
        store.path(key).unlink(missing_ok=True)

    def kept() -> list[tuple[int, int]]:
        return [kc for kc, key in keys.items() if store.result(key) is not None]

    env = service_env(tmp_path, SPECOPS_ARTIFACTS_URL=URL)  # nothing serves it: what the artifacts say is read
    artifacts = tmp_path / "artifacts" / "ngram-local"
    t0 = time.monotonic()
    output = tmp_path / "first.log"
    with output.open("w") as sink:
        first = subprocess.Popen(sweep_cmd("first"), cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while len(kept()) < 2:
            assert first.poll() is None, output.read_text()[-3000:]
            assert time.monotonic() < deadline, output.read_text()[-3000:]
            time.sleep(0.2)
        first.send_signal(signal.SIGTERM)  # what a supervisor (or a cancelled worker) sends
        assert first.wait(timeout=90) == 130, output.read_text()[-3000:]
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    print(f"first sweep killed after {time.monotonic() - t0:.0f}s with cells {kept()}")
    before = kept()
    assert len(before) >= 2
    assert processes_mentioning(str(artifacts / "first")) == []  # its servers stopped with it
    # It ended what it opened: itself, its servers' and cells' directories, each at the step it was in. Killed,
    # not failed: a run SIGTERM stopped says `interrupted` (specops/run/rundir.py), and nobody judges it.
    states = _statuses(artifacts / "first")
    assert states and all(state["state"] in ("interrupted", "ok") for state in states.values()), states
    assert states["."]["state"] == "interrupted" and states["."]["step"], states
    assert "TerminationSignal" in states["."]["error"], states

    t1 = time.monotonic()
    second = subprocess.run(sweep_cmd("second"), cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=900)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    print(f"second sweep: {time.monotonic() - t1:.0f}s\n{second.stdout[-2500:]}")
    outcome = SweepOutcome.model_validate_json((artifacts / "second" / "sweep.json").read_text())
    missing = [kc for kc in keys if kc not in before]
    assert sorted(outcome.measured) == sorted(f"k{k}-c{c}" for k, c in missing)  # nothing measured twice
    # one server per draft length still missing cells, none per cell; the base once, beside them
    assert outcome.server_starts == {"speculative": len({k for k, _ in missing}), "base": 1}
    started = sorted(p.parent.parent.name for p in (artifacts / "second").glob("*/logs/server-speculative.log"))
    assert started == sorted({f"k{k}" for k, _ in missing})
    assert set(kept()) == set(keys)
    assert {(c.k, c.concurrency) for c in outcome.cells} == {(k, c) for k in KS for c in CS}
    assert all(c.status == "ok" and c.speedup is not None for c in outcome.cells), outcome.cells
    assert all(c.speedup_low < c.speedup < c.speedup_high for c in outcome.cells), outcome.cells  # 95% each
    assert set(outcome.best) == set(CS) and set(outcome.crossovers) == {f"K={k}" for k in KS}  # by series label
    for k, c in ((k, c) for k in KS for c in CS):  # every cell is a RunResult of its own, with its report
        result = store.result(keys[(k, c)])
        assert result.benchmark.concurrency == c and f"method.num_speculative_tokens={k}" in result.overrides
        assert (Path(result.run_dir) / "report.md").is_file()
        # the base measured beside it: requests interleaved at 1, CELL_ROUNDS alternating rounds above
        assert [v.name for v in result.variants] == ["speculative", "base"]
        design = (Design.REQUESTS, 1) if c == 1 else (Design.ROUNDS, CELL_ROUNDS)
        assert (result.speedup.design, result.speedup.rounds) == design, (k, c, result.speedup)
    table = (artifacts / "second" / "sweep.md").read_text()
    assert "Crossover" in table and "Recommendation" in table
    assert outcome.choices == choose_k(outcome.cells)  # the K named is the rule's, for these cells
    for c, choice in outcome.choices.items():
        assert f"concurrency {c}: {choice_text(choice)}" in table, table
    print(table)
    assert sorted(p.name for p in (artifacts / "second").glob("*.png")), "the plots"
    states = _statuses(artifacts / "second")
    assert len(states) > 1 and {state["state"] for state in states.values()} == {"ok"}, states
    print(json.dumps(outcome.server_starts), outcome.measured)
    _assert_artifacts(Path(env["PREFECT_HOME"]) / "prefect.db", set(keys))


def _assert_artifacts(database: Path, cells: set[tuple[int, int]]) -> None:
    """What both runs left in their Prefect API's database (the CLI's private server, stopped now): each cell
    under keys of its own naming K and concurrency, never the profile's own; the sweep's plots inline and its
    directory linked, over the artifacts URL."""
    with closing(sqlite3.connect(database)) as db:
        stored = {key: (kind, json.loads(data) if data else None, description) for key, kind, data, description in
                  db.execute("SELECT key, type, data, description FROM artifact WHERE key IS NOT NULL")}
    assert not {"ngram-local-report", "ngram-local-comparison", "ngram-local-run-dir"} & set(stored), sorted(stored)
    for k, c in cells:
        kind, markdown, description = stored[f"ngram-local-sweep-k{k}-c{c}-report"]
        assert kind == "markdown" and description.startswith(f"ngram-local - K={k}, c={c} (sweep cell) report")
        assert f"![comparison.png]({URL}/ngram-local/" in markdown and f"/k{k}/c{c}/comparison.png)" in markdown
        assert stored[f"ngram-local-sweep-k{k}-c{c}-comparison"][0] == "table"
    _, sweep_md, _ = stored["ngram-local-sweep"]
    assert f"![sweep-speedup]({URL}/ngram-local/second/sweep-speedup.png)" in sweep_md, sweep_md
    kind, link, _ = stored["ngram-local-sweep-dir"]
    assert kind == "markdown" and link.endswith(f"({URL}/ngram-local/second/)"), link  # a link artifact's markdown


def _statuses(root: Path) -> dict[str, dict]:
    """Every status.json under a sweep's directory, by its directory relative to the sweep's."""
    return {str(p.parent.relative_to(root)): json.loads(p.read_text()) for p in root.rglob("status.json")}

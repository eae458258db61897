"""cli/history.py through the real CLI entry point and a real (SQLite) results database.

`specops history --trend`: the trend report of each profile, and the newest run's verdicts. `specops compare` and
`specops history`: runs set side by side that ran on different CPU models are called out first, before the table."""
from __future__ import annotations

from pathlib import Path

from cli.main import main
from tests.results_factory import T0, run_result
from tests.unit.regression.runs import baseline, run

XEON = "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"
EPYC = "AMD EPYC 7B13"  # the factory's host


def _on(result, cpu: str):
    return result.model_copy(update={"host": result.host.model_copy(update={"cpu_model": cpu})})


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_compare_of_runs_on_two_cpu_models_prints_the_warning_first(store, capsys):
    a, b = run_result(speedup=1.30), _on(run_result(speedup=1.67, started_at=T0 + 600), XEON)
    for result in (a, b):
        store.append(result)
    assert main(["compare", a.run_id, b.run_id]) == 0
    out = capsys.readouterr().out
    assert out.startswith("! These runs ran on 2 different CPU models:")
    warning, table = out.split("\n\n", 1)
    assert f"{EPYC} (A {a.run_id}); {XEON} (B {b.run_id})" in _flat(warning)
    assert "host cpu" in table and "1.30x faster" in _flat(table) and "1.67x faster" in _flat(table)


def test_compare_of_runs_on_one_cpu_model_prints_no_such_warning(store, capsys):
    a, b = run_result(speedup=1.30), run_result(speedup=1.32, started_at=T0 + 600)
    for result in (a, b):
        store.append(result)
    assert main(["compare", a.run_id, b.run_id]) == 0
    out = capsys.readouterr().out
    assert out.startswith("  run ") and "CPU models" not in out


def test_history_of_runs_on_two_cpu_models_prints_the_warning_before_the_table(store, capsys):
    epyc, xeon = run_result(started_at=T0), _on(run_result(started_at=T0 + 60), XEON)
    for result in (epyc, xeon):
        store.append(result)
    assert main(["history"]) == 0
    out = capsys.readouterr().out
    warning, table = out.split("\n\n", 1)
    assert _flat(warning).startswith(f"! These runs ran on 2 different CPU models: {XEON} ({xeon.run_id}); "
                                     f"{EPYC} ({epyc.run_id}).")  # newest first, as the table
    assert table.startswith("when (UTC)") and epyc.run_id in table and xeon.run_id in table


def test_history_of_runs_on_one_cpu_model_starts_with_the_table(store, capsys):
    for i in range(2):
        store.append(run_result(started_at=T0 + i))
    assert main(["history"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("when (UTC)") and "CPU models" not in out


def test_history_trend_warns_per_profile_whose_runs_ran_on_two_cpu_models(store, capsys):
    store.append(run_result(started_at=T0))
    store.append(_on(run_result(started_at=T0 + 60), XEON))
    store.append(run_result(started_at=T0, profile="ngram-vllm-serve-cpu"))
    assert main(["history", "--trend"]) == 0
    blocks = capsys.readouterr().out.split("\n\n")
    local = next(i for i, block in enumerate(blocks) if block.startswith("ngram-local: 2 runs"))
    assert blocks[local - 1].startswith("! These runs ran on 2 different CPU models:")  # right before its block
    vllm = next(i for i, block in enumerate(blocks) if block.startswith("ngram-vllm-serve-cpu: 1 runs"))
    assert vllm == 0 or not blocks[vllm - 1].startswith("!")


def test_trend_writes_each_profiles_report_and_prints_the_verdicts(store, tmp_path, capsys):
    for result in [*baseline(3), run(3, speedup=1.2), run(4, speedup=1.2)]:
        store.append(result)
    store.append(run(0, uid="e" * 32).model_copy(update={"profile": "eagle3-vllm"}))
    assert main(["history", "--trend"]) == 0
    out = capsys.readouterr().out
    root = tmp_path / "artifacts" / "trends"
    for profile in ("ngram-local", "eagle3-vllm"):
        for name in ("trend.html", "trend.png"):
            path = root / profile / name
            assert str(path) in out and path.stat().st_size > 10_000
    ngram = out[out.index("ngram-local: 5 runs"):]
    speedup = next(line for line in ngram.splitlines() if line.startswith("ngram-local  speedup"))
    assert speedup.split()[2] == "regression"
    assert "eagle3-vllm: 1 runs" in out and "insufficient-data" in out


def test_an_interrupted_newest_run_leaves_the_standing_verdicts_shown_not_no_runs(store, capsys):
    """Issue 51: `history --trend` said "no verdicts (no runs)" over a standing regression once a run was
    interrupted after it."""
    from specops.results.model import Status

    interrupted = run(5, status=Status.INTERRUPTED)
    for result in [*baseline(3), run(3, speedup=1.2), run(4, speedup=1.2), interrupted]:
        store.append(result)
    assert main(["history", "ngram-local", "--trend"]) == 0
    out = capsys.readouterr().out
    assert "no runs" not in out and f"never judged: {interrupted.run_id} (interrupted)" in out
    speedup = next(line for line in out.splitlines() if line.startswith("ngram-local  speedup"))
    assert speedup.split()[2] == "regression"


def test_trend_of_one_profile_and_of_none(store, tmp_path, capsys):
    for result in baseline(4):
        store.append(result)
    store.append(run(0, uid="e" * 32).model_copy(update={"profile": "eagle3-vllm"}))
    assert main(["history", "ngram-local", "--trend"]) == 0
    assert sorted(p.name for p in (tmp_path / "artifacts" / "trends").iterdir()) == ["ngram-local"]
    assert "ngram-local: 4 runs" in capsys.readouterr().out
    assert main(["history", "no-such-profile", "--trend"]) == 0
    assert capsys.readouterr().out.strip() == "no runs of no-such-profile in the results database"
    assert not Path(tmp_path / "artifacts" / "trends" / "no-such-profile").exists()


def test_plain_history_is_unchanged(store, tmp_path, capsys):
    store.append(run(0))
    assert main(["history"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("when (UTC)") and not (tmp_path / "artifacts" / "trends").exists()

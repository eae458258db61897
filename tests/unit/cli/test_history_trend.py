"""`specops history --trend`: the trend report of each profile from the results database, and the
newest run's verdicts, through the real CLI entry point and a real (SQLite) results database."""
from __future__ import annotations

from pathlib import Path

from cli.main import main
from tests.unit.regression.runs import baseline, run


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

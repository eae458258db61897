"""`specops upgrade-check` refuses sides it cannot compare before Prefect starts: one message, exit 2."""
from __future__ import annotations

import pytest

from cli.main import main


@pytest.mark.parametrize(("sides", "named"), [
    (["--before", "benchmark.rounds=3"], "--before: benchmark.rounds=3: a side sets only backend fields"),
    ([], "both sides resolve to the same backend settings"),
    (["--after", "backend.kind=nope"], "backend"),
])
def test_sides_it_cannot_compare_are_refused_before_any_run(sides, named, capsys):
    assert main(["upgrade-check", "ngram-vllm-serve-cpu", *sides]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err


@pytest.mark.parametrize("args", [["calibrate", "ngram-local", "--runs", "2"],
                                  ["compare-profiles", "ngram-local", "draft-target-local"],
                                  ["upgrade-check", "ngram-local", "--after", "backend.threads=2"]])
def test_a_flow_none_of_whose_runs_measured_prints_its_table_and_exits_1(args, monkeypatch, tmp_path, capsys):
    """The flow ends Failed with NoneMeasured (flows/finish.py table_or_failed); the environment is this test's own
    (the checks before Prefect run for real), the flow a stand-in that raises what Prefect raises for that state."""
    from cli import flow_commands
    from flows.finish import NoneMeasured

    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("SPECOPS_RESULTS_URL", f"sqlite:///{tmp_path / 'results.db'}")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)

    def none_measured(args, load):
        raise NoneMeasured("calibration of ngram-local: none of its 2 runs measured", "| run | FAILED (preflight) |")

    monkeypatch.setattr(flow_commands, "_flow_command", none_measured)
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert "| run | FAILED (preflight) |" in out and "none of its 2 runs measured" in err

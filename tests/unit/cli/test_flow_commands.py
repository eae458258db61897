"""The flow subcommands: `specops upgrade-check` refuses sides it cannot compare before Prefect starts (one message,
exit 2); a flow none of whose runs measured prints its table and exits 1; `sweep` and `calibrate` take the inputs
their deployment's form shows."""
from __future__ import annotations

import argparse
from typing import get_type_hints

import pytest

from cli.main import _parser, main
from flows.calibrate import calibrate
from flows.sweep import sweep
from prefect_adapters.parameters import CALIBRATE_INPUTS, SWEEP_INPUTS


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

    def none_measured(args, load, loads):
        raise NoneMeasured("calibration of ngram-local: none of its 2 runs measured", "| run | FAILED (preflight) |")

    monkeypatch.setattr(flow_commands, "_flow_command", none_measured)
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert "| run | FAILED (preflight) |" in out and "none of its 2 runs measured" in err


def _subcommand(command: str) -> argparse.ArgumentParser:
    parser = _parser([command])
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices[command]


@pytest.mark.parametrize(("command", "flow", "inputs"), [("sweep", sweep, SWEEP_INPUTS),
                                                         ("calibrate", calibrate, CALIBRATE_INPUTS)])
def test_the_subcommand_and_the_deployments_form_show_the_same_inputs(command, flow, inputs):
    """The flow's signature is its declared inputs; `specops <command> --help` shows each under its flag with the
    form's description and default; at each of the form's bounds the CLI takes the bound and refuses past it."""
    hints = get_type_hints(flow.fn, include_extras=True)
    assert {name: hint for name, hint in hints.items() if name != "return"} == inputs
    form = flow.parameters.model_dump_for_openapi()["properties"]
    parser = _subcommand(command)
    actions = {a.dest: a for a in parser._actions}
    assert list(form) == list(inputs)
    for name, prop in form.items():
        action = actions[name]
        assert action.help.replace("%%", "%").startswith(prop["description"]), name
        given = action.default if name != "profile" else prop["default"]
        assert given == prop["default"] or list(given or []) == prop["default"], (name, given, prop["default"])
        bounds = prop.get("items", prop)
        if "maximum" not in bounds:
            continue
        flag = action.option_strings[0]
        parser.parse_args(["ngram-local", flag, str(bounds["maximum"])])
        for outside in (bounds["maximum"] + 1, bounds.get("minimum", 0) - 1):
            with pytest.raises(SystemExit):
                parser.parse_args(["ngram-local", flag, str(outside)])

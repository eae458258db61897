"""`specops sweep`'s grid from its flags, in process: --k x --ngram-min x --ngram-max as settings, --from-replay
alone, each refusal naming its flag (the subprocess rows of test_bad_input.py check the exit code and message)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import cli.flow_commands as commands
from prefect_adapters.parameters import SWEEP_INPUTS
from specops.profile.errors import ProfileError


def args(**given) -> SimpleNamespace:
    return SimpleNamespace(**({"profile": "ngram-vllm-serve-cpu", "overrides": [], "draft_lengths": [1, 2, 4],
                               "concurrencies": [1, 2], "ngram_min": [], "ngram_max": [], "from_replay": 0,
                               "max_cells": 64, "run_id": "", "prune": False, "serve_schedule": True} | given))


def test_ngram_flags_cross_the_draft_lengths_dropping_min_above_max():
    grid = commands._sweep_grid(args(draft_lengths=[2, 4], ngram_min=[1, 3], ngram_max=[2, 5]), "ngram")
    assert [s.name for s in grid.series()] == ["k2-min1-max2", "k2-min1-max5", "k2-min3-max5", "k4-min1-max2",
                                               "k4-min1-max5", "k4-min3-max5"]
    assert [s.name for s in commands._sweep_grid(args(), "ngram").series()] == ["k1", "k2", "k4"]  # the default


@pytest.mark.parametrize(("given", "flag", "message"), [
    ({"from_replay": 2, "ngram_min": [1]}, "--from-replay", "drop --ngram-min"),
    ({"ngram_min": [0]}, "--ngram-min", "takes 1 to 16"),
    ({"draft_lengths": [2, 2]}, "--k", "[2] given more than once"),
])
def test_bad_flags_are_refused_naming_the_flag(given, flag, message):
    with pytest.raises(ProfileError) as err:
        commands._sweep_grid(args(**given), "ngram")
    assert flag in str(err.value) and message in str(err.value)


def test_from_replay_hands_the_count_to_the_flow_after_checking_the_venv(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))  # the checks before Prefect run for real
    monkeypatch.setenv("SPECOPS_RESULTS_URL", f"sqlite:///{tmp_path / 'results.db'}")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    calls = []
    monkeypatch.setattr("specops.backends.vllm.cpu.preflight", lambda: calls.append("preflight") or [])
    monkeypatch.setattr(commands, "_flow_command", lambda a, load, loads: calls.append(load) or SimpleNamespace(
        table="T", run_dir="/runs/x", measured=[], server_starts={}))
    assert commands.cmd_sweep(args(from_replay=3)) == 0
    assert calls[0] == "preflight"
    assert "6 cells (3 series x 2 concurrencies), up to 4 servers" in capsys.readouterr().err
    import flows.sweep

    monkeypatch.setattr(flows.sweep, "sweep", lambda *a, **kw: (a, kw))
    (load,) = [call for call in calls if callable(call)]
    positional, keywords = load()()  # what the flow is called with: every input by its name
    assert positional == () and keywords["profile"] == "ngram-vllm-serve-cpu" and keywords["from_replay"] == 3
    assert set(keywords) == set(SWEEP_INPUTS)

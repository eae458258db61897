"""cli/replay.py through the real CLI entry point, the replay itself stood in for (tests/integration/replay runs
it): input is checked before any work, the profile's own setting is ranked and marked, --json keeps every one."""
from __future__ import annotations

import json

import pytest

from cli.common import EXIT_PREREQUISITES, EXIT_PROFILE
from cli.main import main
from specops.replay import run
from specops.replay.grid import Prediction


@pytest.fixture
def replayed(monkeypatch):
    """predict() answering at once, 1 token a step for every setting but K 4's 2; records what it was asked."""
    asked = []

    def predict(loaded, settings, say, workload=None):
        asked.append(settings)
        return [Prediction.of(s, [{"steps": 10, "emitted": 20 if s.k == 4 else 10, "drafted_steps": 10,
                                   "drafted": 10 * s.k, "accepted": 10 if s.k == 4 else 0}]) for s in settings]

    monkeypatch.setattr(run, "predict", predict)
    monkeypatch.setattr("specops.backends.vllm.cpu.preflight", lambda: [])
    return asked


def test_the_ranking_puts_the_best_first_marks_the_profiles_setting_and_writes_every_one(replayed, capsys, tmp_path):
    out_file = tmp_path / "p.json"
    assert main(["replay", "ngram-vllm-serve-cpu", "--grid", "ngram", "--top", "3", "--json", str(out_file)]) == 0
    table = capsys.readouterr().out.split("-\n", 1)[1]
    assert table.splitlines()[0].startswith("ngram min 1 max 1 K 4")
    assert "ngram min 2 max 3 K 4 (profile)" in table and "predicted speedup weighs" in table
    written = json.loads(out_file.read_text())
    assert len(written) == len(replayed[0]) and all(p["setting"]["method"] == "ngram" for p in written)
    assert [p["label"] for p in written if p["profile"]] == ["ngram min 2 max 3 K 4"]


def test_the_json_file_is_replaced_whole_never_written_in_place(replayed, tmp_path):
    """Issue 51: --json was written in place (a reader, or a full disk, saw half of it): an earlier file open for
    reading keeps its whole content, the new one arrives whole."""
    out_file = tmp_path / "p.json"
    out_file.write_text('["an earlier replay"]\n')
    with out_file.open() as earlier:
        assert main(["replay", "ngram-vllm-serve-cpu", "--grid", "profile", "--json", str(out_file)]) == 0
        assert earlier.read() == '["an earlier replay"]\n'
    assert len(json.loads(out_file.read_text())) == 1 and sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


def test_the_profiles_own_setting_alone(replayed, capsys):
    assert main(["replay", "ngram-vllm-serve-cpu", "--set", "method.num_speculative_tokens=8", "--grid", "profile"]) == 0
    assert [s.label() for s in replayed[0]] == ["ngram min 2 max 3 K 8"]
    assert main(["replay", "draft-target-vllm-serve-cpu", "--grid", "profile"]) == EXIT_PROFILE
    assert "method.kind" in capsys.readouterr().err and len(replayed) == 1


@pytest.mark.parametrize("args, code, named", [
    (["--json", "/no/such/dir/p.json"], EXIT_PREREQUISITES, "--json"),
    (["--set", "benchmark.prompt_offset=100000"], EXIT_PROFILE, "benchmark.prompts"),
    (["--set", "benchmark.output_tokens=0"], EXIT_PROFILE, "benchmark.output_tokens"),
])
def test_bad_input_is_named_before_any_work(replayed, capsys, args, code, named):
    assert main(["replay", "ngram-vllm-serve-cpu", *args]) == code
    assert named in capsys.readouterr().err and not replayed


def test_a_missing_vllm_venv_is_a_prerequisite_named_with_its_fix(replayed, monkeypatch, capsys):
    monkeypatch.setattr("specops.backends.vllm.cpu.preflight", lambda: ["no vLLM CPU venv at /x: `make install`"])
    assert main(["replay", "ngram-vllm-serve-cpu"]) == EXIT_PREREQUISITES
    assert "make install" in capsys.readouterr().err and not replayed

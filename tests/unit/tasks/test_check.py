"""The lossless check step: the speculative server's outputs against the base server's, the verdict in the run
directory; one differing output makes the run's check fail, identical outputs pass it."""
from __future__ import annotations

import json

from prefect.logging import disable_run_logger

from specops.pipeline.check import separate_check
from specops.run.rundir import RunDir
from tasks.check import compare_check_outputs


def checked(outputs: list[str]):
    return separate_check(outputs, 48, "a test")


def test_a_speculative_output_that_differs_from_the_bases_fails_the_check_and_is_recorded(tmp_path):
    run = RunDir(tmp_path)
    base, speculative = ["def f(x):\n    return x", "same"], ["def f(x):\n    return y", "same"]
    with disable_run_logger():
        result = compare_check_outputs.fn(checked(base), checked(speculative), run)
    assert not result.valid and (result.compared, result.mismatches) == (2, 1)
    assert result.first.prompt_index == 0 and result.first.speculative.endswith("return y")
    written = json.loads((tmp_path / "check" / "lossless.json").read_text())
    assert written["valid"] is False and written["mismatches"] == 1


def test_identical_outputs_pass_the_check(tmp_path):
    with disable_run_logger():
        result = compare_check_outputs.fn(checked(["a", "b"]), checked(["a", "b"]), RunDir(tmp_path))
    assert result.valid and result.compared == 2 and result.source == "a separate check of 2 prompts x 48 tokens (a test)"
    assert json.loads((tmp_path / "check" / "lossless.json").read_text())["valid"] is True

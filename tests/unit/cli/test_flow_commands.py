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

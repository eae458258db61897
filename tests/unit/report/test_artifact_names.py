"""specops/report/writer.py: a sweep cell and a comparison's member publish under keys of their own,
named from the run's RunRole (specops/results/role.py)."""
from __future__ import annotations

import re

import pytest

from specops.report.writer import artifact_key, run_names
from specops.results.role import CALIBRATE, COMPARE, SWEEP_CELL, RunRole
from specops.sweep.grid import series_dir
from tests.results_factory import run_result

KEY = re.compile(r"^[a-z0-9-]+$")


def cell(k: int, c: int, schedule: bool = False, profile: str = "ngram-local"):
    base = run_result(profile=profile)
    sweep = f"/work/artifacts/{profile}/sweep-1"
    return base.model_copy(update={
        "run_dir": f"{sweep}/{series_dir(k, schedule)}/c{c}", "draft_length": k,
        "role": RunRole(kind=SWEEP_CELL, of=sweep, series=series_dir(k, schedule)),
        "benchmark": base.benchmark.model_copy(update={"concurrency": c})})


def test_a_run_of_its_own_keeps_the_profiles_keys():
    names = run_names(run_result(profile="Eagle3_vLLM.cpu"))
    assert names.key("report") == "eagle3-vllm-cpu-report" and names.title == "Eagle3_vLLM.cpu"


def test_a_sweep_cell_names_k_and_concurrency():
    names = run_names(cell(2, 4))
    assert names.key("report") == "ngram-local-sweep-k2-c4-report"
    assert names.key("run-dir") == "ngram-local-sweep-k2-c4-run-dir"
    assert names.title == "ngram-local - K=2, c=4 (sweep cell)"
    schedule = run_names(cell(4, 1, schedule=True))
    assert schedule.key("report") == "ngram-local-sweep-schedule-c1-report"
    assert schedule.title == "ngram-local - schedule up to K=4, c=1 (sweep cell)"


def test_a_comparison_member_names_its_flow_k_and_concurrency():
    result = run_result().model_copy(update={"role": RunRole(kind=COMPARE), "draft_length": 3})
    names = run_names(result)
    assert names.key("report") == "compare-ngram-local-report"
    assert names.title == "ngram-local - K=3, c=1 (compare member)"
    # a run without a draft length (an A/A run serves no draft) leaves K out
    aa = result.model_copy(update={"role": RunRole(kind=CALIBRATE), "draft_length": None})
    assert run_names(aa).title == "ngram-local - c=1 (calibrate member)"


@pytest.mark.parametrize("parts", [("Ngram Local", "report"), ("a__b", "--", "c"), ("ünïcode", "x")])
def test_keys_are_lowercase_letters_digits_and_dashes(parts):
    key = artifact_key(*parts)
    assert KEY.match(key) and not key.startswith("-") and "--" not in key

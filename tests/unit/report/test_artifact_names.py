"""specops/report/artifact_names.py: a sweep cell and a comparison's member publish under keys of their own."""
from __future__ import annotations

import re

import pytest

from specops.report.artifact_names import COMPARE_TAG, artifact_key, member_of, run_names
from specops.results.model import SWEEP_CELL_NOTE
from specops.sweep.grid import cell_overrides, series_dir
from tests.results_factory import run_result

KEY = re.compile(r"^[a-z0-9-]+$")


def cell(k: int, c: int, schedule: bool = False, profile: str = "ngram-local"):
    base = run_result(profile=profile)
    sweep = f"/work/artifacts/{profile}/sweep-1"
    return base.model_copy(update={
        "run_dir": f"{sweep}/{series_dir(k, schedule)}/c{c}", "overrides": [*base.overrides, *cell_overrides(k, c)],
        "benchmark": base.benchmark.model_copy(update={"concurrency": c}),
        "notes": [f"{SWEEP_CELL_NOTE} of {sweep}: {' '.join(cell_overrides(k, c))}"]})


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
    # a cell is never mistaken for the profile's own run, whatever the tags of the flow run
    assert run_names(cell(2, 4), member_of([COMPARE_TAG])).key("report") == "ngram-local-sweep-k2-c4-report"


def test_a_comparison_member_names_its_flow_k_from_the_profile_and_concurrency():
    result = run_result()  # profiles/ngram-local.yaml, as shipped
    from specops.profile.loader import load_profile

    k = load_profile("ngram-local").profile.method.draft_length()
    names = run_names(result, member_of(["specops", COMPARE_TAG]))
    assert names.key("report") == "compare-ngram-local-report"
    assert names.title == f"ngram-local - K={k}, c=1 (compare member)"
    # a profile that no longer loads still gets its keys; only K is left out
    gone = result.model_copy(update={"profile_source": "/nonexistent/profile.yaml"})
    assert run_names(gone, "calibrate").title == "ngram-local - c=1 (calibrate member)"


def test_tags_that_make_no_member():
    assert member_of([]) is None and member_of(["specops", "regression"]) is None


@pytest.mark.parametrize("parts", [("Ngram Local", "report"), ("a__b", "--", "c"), ("ünïcode", "x")])
def test_keys_are_lowercase_letters_digits_and_dashes(parts):
    key = artifact_key(*parts)
    assert KEY.match(key) and not key.startswith("-") and "--" not in key

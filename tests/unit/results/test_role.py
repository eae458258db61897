"""specops/results/role.py: what a run is, one typed field of its RunResult, read by artifact names, regression
baselines and the calibration noise floor; older records get theirs once, where they load."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from specops.registry import UnknownName
from specops.regression.runs import profile_runs
from specops.report.writer import run_names
from specops.results.calibration import is_calibration
from specops.results.model import RunResult
from specops.results.role import CALIBRATE, OWN, ROLES, SWEEP_CELL, UPGRADE, RoleSpec, RunRole
from tests.reference import ROOT as REPO_ROOT
from tests.results_factory import run_result


def test_a_new_role_is_one_registration():
    """Registered once, a role names its artifacts and says whether it is the profile as served: nothing else
    learns of it."""
    ROLES.register("canary", RoleSpec(False, lambda role, profile, c: ("canary", profile, role.of or ""),
                                      lambda role, profile, load: f"{profile} - {load} (canary of {role.of})"))
    try:
        canary = run_result().model_copy(update={"role": RunRole(kind="canary", of="v2"), "draft_length": 4})
        own = run_result()
        names = run_names(canary)
        assert names.key("report") == "canary-ngram-local-v2-report"
        assert names.title == "ngram-local - K=4, c=1 (canary of v2)"
        assert profile_runs([canary, own]) == [own]
        # the role survives the record's JSON (the results database and manifest.json)
        assert RunResult.model_validate_json(canary.model_dump_json()).role == canary.role
    finally:
        ROLES._entries.pop("canary")


def test_an_unknown_role_names_the_known_ones():
    with pytest.raises(UnknownName, match="unknown run role 'nightly'; allowed: calibrate, calibrate-ab, compare, own"):
        RunRole(kind="nightly")


def test_only_an_upgrade_side_on_another_engine_leaves_the_profiles_history():
    assert RunRole().as_served and RunRole(kind=UPGRADE).as_served
    assert not RunRole(kind=UPGRADE, off_engine=True).as_served and not RunRole(kind=SWEEP_CELL).as_served


def _schema_4(**fields) -> str:
    record = json.loads(run_result().model_dump_json())
    record.pop("role"), record.pop("draft_length")
    return json.dumps({**record, "schema_version": 4, **fields})


@pytest.mark.parametrize(("fields", "kind", "as_served"), [
    ({}, OWN, True),
    ({"notes": ["sweep cell of /a/sweep-1: method.num_speculative_tokens=2"]}, SWEEP_CELL, False),
    ({"notes": ["upgrade-check side"]}, UPGRADE, False),
    ({"method": "none"}, CALIBRATE, True),
])
def test_a_record_from_before_roles_gets_the_role_its_notes_and_method_said(fields, kind, as_served):
    loaded = RunResult.model_validate_json(_schema_4(**fields))
    assert (loaded.role.kind, loaded.role.as_served) == (kind, as_served)
    assert is_calibration(loaded) is (kind == CALIBRATE)


def test_a_new_record_is_what_its_role_says_whatever_its_notes_and_method():
    """Notes are free text again, and method none is not what makes an A/A run."""
    result = run_result().model_copy(update={"notes": ["sweep cell, upgrade-check side"], "method": "none"})
    assert RunResult.model_validate_json(result.model_dump_json()).role.kind == OWN
    assert not is_calibration(result) and profile_runs([result]) == [result]


def test_no_run_identity_is_read_from_tags_or_note_prefixes():
    source = subprocess.run(["git", "ls-files", "specops", "flows", "tasks", "prefect_adapters", "cli"],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.split()
    reads = re.compile(r"flow_run\.tags|\.notes\b.*startswith|startswith\(.*\bnotes\b")
    legacy = "specops/results/role.py"  # legacy_role: records from before roles, read once where they load
    found = [f"{path}:{i}" for path in source if path.endswith(".py") and path != legacy and (REPO_ROOT / path).exists()
             for i, line in enumerate((REPO_ROOT / path).read_text().splitlines(), 1) if reads.search(line)]
    assert found == []

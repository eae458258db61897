"""The upgrade flow's form: the profile a choice of the shipped ones, both sides required and described as
backend overrides with an example, every parameter described; each side runs the profile with the shared
overrides and its own on top."""
from __future__ import annotations

import flows.upgrade as upgrade_flow
from flows.upgrade import upgrade
from specops.profile.loader import list_profile_names
from specops.upgrade.defaults import CPU_REFERENCE
from tests.results_factory import run_result


def test_the_form_explains_itself():
    schema = upgrade.parameters.model_dump_for_openapi()
    properties = schema["properties"]
    assert list(properties) == ["profile", "before", "after", "overrides", "run_id"]
    assert all(len(p.get("description", "")) > 20 for p in properties.values()), properties
    assert properties["profile"]["enum"] == list_profile_names()
    assert schema["required"] == ["profile", "before", "after"]
    for side in ("before", "after"):
        assert "backend" in properties[side]["description"]
        assert properties[side]["examples"][0][0].startswith("backend.image=")


def test_each_side_runs_with_the_shared_overrides_and_its_own_on_top(monkeypatch):
    ran: list[tuple[str, list[str]]] = []
    # the two sides' runs and the table are stand-ins; the sides are validated as the flow validates them
    monkeypatch.setattr(upgrade_flow, "validate_upgrade", upgrade_flow.validate_upgrade.fn)
    monkeypatch.setattr(upgrade_flow, "run_specdec", lambda profile, overrides, role: ran.append(
        (role.of, overrides)) or run_result())
    monkeypatch.setattr(upgrade_flow, "publish_upgrade", lambda profile, sides, results, run_id: "table")
    shared = ["benchmark.num_requests=4", "benchmark.rounds=2"]
    assert upgrade.fn("ngram-vllm-serve-cpu", [CPU_REFERENCE], [], shared) == "table"
    assert ran == [("before", [*shared, CPU_REFERENCE]), ("after", shared)]

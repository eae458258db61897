"""The upgrade flow's form: the profile a choice of the shipped ones, both sides required and described as
backend overrides with an example, every parameter described (each side runs the profile with the shared overrides
and its own on top: tests/unit/prefect_adapters/test_refusal.py, with the flow's one load of its profile)."""
from __future__ import annotations

from flows.upgrade import upgrade
from specops.profile.loader import list_profile_names


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

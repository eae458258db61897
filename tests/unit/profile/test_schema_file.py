"""profiles/profile.schema.json is generated from the pydantic model and must stay in step."""
from __future__ import annotations

import json
from pathlib import Path

from specops.profile.schema import Profile

SCHEMA = Path(__file__).resolve().parents[3] / "profiles" / "profile.schema.json"


def test_committed_schema_matches_model():
    assert json.loads(SCHEMA.read_text()) == Profile.model_json_schema(), "run `make schema`"


def test_schema_forbids_unknown_keys_everywhere():
    schema = Profile.model_json_schema()
    assert schema["additionalProperties"] is False
    for name, definition in schema["$defs"].items():
        if definition.get("type") == "object":
            assert definition.get("additionalProperties") is False, name

"""The schema-version policy: a newer specops' record is read with what this one knows, or skipped by name."""
from __future__ import annotations

import json

from specops.results.compat import ReadNotes, load_record
from specops.results.metrics import PromptSpread
from specops.results.model import SCHEMA_VERSION
from tests.results_factory import run_result


def _stored(**changes):
    data = run_result().model_dump(mode="json")
    data.update(changes)
    return data


def test_a_record_of_this_version_loads_whole():
    data = _stored()
    loaded = load_record(data)
    assert loaded.result is not None and loaded.dropped == () and loaded.problem is None
    assert loaded.result.model_dump(mode="json") == data


def test_a_newer_record_is_read_without_the_fields_this_version_does_not_know():
    data = _stored(schema_version=SCHEMA_VERSION + 1, energy_budget={"joules": 3})
    data["phases"]["fan_speed_s"] = 1.0  # a field added inside a nested record
    data["variants"][0]["metrics"]["tail_latency_ms"] = 9.0  # and inside a list's member
    loaded = load_record(data)
    assert loaded.result is not None, loaded.problem
    assert set(loaded.dropped) == {"energy_budget", "phases.fan_speed_s", "variants.0.metrics.tail_latency_ms"}
    assert loaded.result.schema_version == SCHEMA_VERSION + 1  # it still says which specops wrote it
    kept = loaded.result.model_dump(mode="json")
    assert kept["uid"] == data["uid"] and kept["speedup"] == data["speedup"]
    assert kept["variants"][0]["metrics"]["output_token_throughput_tok_s"] == data["variants"][0]["metrics"]["output_token_throughput_tok_s"]
    assert "tail_latency_ms" in data["variants"][0]["metrics"]  # the stored JSON is not changed


def test_a_newer_record_that_changed_a_field_is_skipped_naming_the_field_and_both_versions():
    data = _stored(schema_version=SCHEMA_VERSION + 1, extra_field=1)
    data["started_at"] = "yesterday"
    loaded = load_record(data)
    assert loaded.result is None
    assert f"schema {SCHEMA_VERSION + 1}, this one reads {SCHEMA_VERSION}" in loaded.problem
    assert "started_at" in loaded.problem


def test_a_record_of_this_version_with_an_unknown_field_is_not_read_leniently():
    # Only a newer writer explains an unknown field; in a record of this version it is damage.
    loaded = load_record(_stored(energy_budget=1))
    assert loaded.result is None and "energy_budget" in loaded.problem and "newer" not in loaded.problem


def test_notes_name_each_run_once_shown_in_part_or_skipped():
    notes = ReadNotes()
    partial = _stored(schema_version=SCHEMA_VERSION + 1, run_id="newer-run", energy_budget=1)
    broken = _stored(schema_version=SCHEMA_VERSION + 2, run_id="changed-run", status="paused")
    for data in (_stored(), partial, broken, ["not", "a", "record"]):
        notes.add(load_record(data), data)
    lines = notes.lines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("1 run(s) written by a newer specops") and "newer-run" in lines[0]
    assert "energy_budget" in lines[0]
    assert lines[1].startswith("2 run(s) skipped") and "changed-run" in lines[1] and "status" in lines[1]
    assert "not a JSON object" in lines[1]


def test_a_speedup_recorded_before_its_per_prompt_spread_loads_without_one_and_a_new_one_keeps_its_prompts():
    old = _stored(schema_version=5)
    assert "per_prompt" not in old["speedup"] or old["speedup"].pop("per_prompt") is None
    loaded = load_record(old)
    assert loaded.result is not None and loaded.result.speedup.per_prompt is None and loaded.dropped == ()
    result = run_result()
    spread = PromptSpread(by_prompt={0: 1.1, 7: 4.9, 12: 1.0})
    data = result.model_copy(update={"speedup": result.speedup.model_copy(update={"per_prompt": spread})})
    stored = json.loads(json.dumps(data.model_dump(mode="json")))  # JSON keys are strings
    assert load_record(stored).result.speedup.per_prompt == spread and spread.max_prompt == 7

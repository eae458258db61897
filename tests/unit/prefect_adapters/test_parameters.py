"""The forms the deployments show: every flow parameter described, the profile a choice of the shipped ones,
the bounds those of the profile schema; the server's check (Prefect's own validator) refuses what the form
does not offer, while a flow called in Python still takes a profile file's path."""
from __future__ import annotations

import pytest
from prefect.utilities.schema_tools import ValidationError, validate

from flows.calibrate import calibrate
from flows.compare import compare
from flows.specdec import specdec
from flows.sweep import sweep
from flows.train_draft import train_draft
from prefect_adapters.parameters import MAX_CONCURRENCY, MAX_K, MAX_LOOKUP, OVERRIDE_EXAMPLE
from specops.profile.calibration import check_runs
from specops.profile.errors import ProfileError
from specops.profile.loader import list_profile_names, load_profile, profiles_dir
from specops.results.calibration import MAX_RUNS, MIN_RUNS
from specops.sweep.grid import C_KEY, K_KEY, MAX_REPLAYED

FLOWS = [specdec, train_draft, sweep, compare, calibrate]


def schema(flow) -> dict:
    """What `prefect deploy` stores as the deployment's parameter_openapi_schema (prefect/cli/deploy/_core.py)."""
    return flow.parameters.model_dump_for_openapi()


@pytest.mark.parametrize("flow", FLOWS, ids=lambda f: f.name)
def test_every_parameter_has_a_description(flow):
    properties = schema(flow)["properties"]
    assert properties
    for name, prop in properties.items():
        assert len(prop.get("description", "")) > 20, f"{flow.name}.{name} has no description"
        # one input per field: an anyOf (e.g. `str | None`) shows a type switch in the form
        assert "anyOf" not in prop and "type" in prop, f"{flow.name}.{name}: {prop}"
        assert "<" not in prop["description"].replace("`profiles/<name>.yaml`", ""), "the UI reads it as HTML"


@pytest.mark.parametrize("flow", [specdec, train_draft, sweep, calibrate], ids=lambda f: f.name)
def test_the_profile_is_a_choice_of_the_shipped_profiles(flow):
    profile = schema(flow)["properties"]["profile"]
    assert profile["enum"] == list_profile_names() and profile["type"] == "string"
    assert profile["default"] in profile["enum"]


def test_compare_takes_two_or_more_different_shipped_profiles():
    profiles = schema(compare)["properties"]["profiles"]
    assert profiles["items"]["enum"] == list_profile_names()
    assert (profiles["minItems"], profiles["uniqueItems"]) == (2, True)
    assert schema(compare)["required"] == ["profiles"]


@pytest.mark.parametrize("flow", FLOWS, ids=lambda f: f.name)
def test_overrides_are_key_value_strings_with_an_example_that_loads(flow):
    overrides = schema(flow)["properties"]["overrides"]
    assert overrides["type"] == "array" and overrides["items"] == {"type": "string"} and overrides["default"] == []
    assert overrides["examples"] == [[OVERRIDE_EXAMPLE]] and "key=value" in overrides["description"]
    assert OVERRIDE_EXAMPLE in overrides["description"]
    key, _, value = OVERRIDE_EXAMPLE.partition("=")
    assert load_profile("ngram-local", [OVERRIDE_EXAMPLE]).resolved["benchmark"]["num_requests"] == int(value)


def test_sweep_grid_bounds_are_the_profile_schemas():
    props = schema(sweep)["properties"]
    for name, key, top in (("draft_lengths", K_KEY, MAX_K), ("concurrencies", C_KEY, MAX_CONCURRENCY)):
        prop = props[name]
        assert prop["items"] == {"type": "integer", "minimum": 1, "maximum": top}
        assert (prop["minItems"], prop["uniqueItems"], prop["default"]) == (1, True, [1, 2, 4])
        assert load_profile("ngram-local", [f"{key}={top}"])  # the largest value the form offers loads
        with pytest.raises(ProfileError, match=key.rsplit(".", 1)[1]):
            load_profile("ngram-local", [f"{key}={top + 1}"])  # and the next one is the profile's error too


def test_sweep_ngram_knob_bounds_are_the_method_specs_and_the_replay_count_is_bounded():
    props = schema(sweep)["properties"]
    for name, key in (("ngram_min", "method.prompt_lookup_min"), ("ngram_max", "method.prompt_lookup_max")):
        prop = props[name]
        assert prop["items"] == {"type": "integer", "minimum": 1, "maximum": MAX_LOOKUP}
        assert prop["uniqueItems"] is True and prop["default"] == [] and key in prop["description"]
        assert load_profile("ngram-local", [f"{key}={MAX_LOOKUP}", f"method.prompt_lookup_max={MAX_LOOKUP}"])
        with pytest.raises(ProfileError, match=key.rsplit(".", 1)[1]):
            load_profile("ngram-local", [f"{key}={MAX_LOOKUP + 1}"])  # one more is the profile's error too
    replay = props["from_replay"]
    assert (replay["minimum"], replay["maximum"], replay["default"]) == (0, MAX_REPLAYED, 0)
    assert "specops replay" in replay["description"]


def test_calibration_runs_are_bounded_where_the_cli_bounds_them():
    runs = schema(calibrate)["properties"]["runs"]
    assert (runs["minimum"], runs["maximum"], runs["default"]) == (MIN_RUNS, MAX_RUNS, 20)
    for bad in (MIN_RUNS - 1, MAX_RUNS + 1):
        with pytest.raises(ProfileError, match="runs"):
            check_runs(bad, 0)


def test_the_servers_check_refuses_what_the_form_does_not_offer():
    """Prefect's validator, as the server runs it on a deployment run's parameters (enforce_parameter_schema)."""
    path = str(profiles_dir() / "ngram-local.yaml")
    validate({"profile": "ngram-local", "draft_lengths": [1, 8]}, schema(sweep), raise_on_error=True)
    for bad in ({"profile": path}, {"profile": "ngram-locl"}, {"draft_lengths": [0]}, {"draft_lengths": [2, 2]},
                {"concurrencies": []}, {"overrides": "benchmark.num_requests=8"}):
        with pytest.raises(ValidationError):
            validate(bad, schema(sweep), raise_on_error=True)
    for bad in ({"profiles": ["ngram-local"]}, {"profiles": ["ngram-local", "ngram-local"]}):
        with pytest.raises(ValidationError):
            validate(bad, schema(compare), raise_on_error=True)
    with pytest.raises(ValidationError):
        validate({"runs": MAX_RUNS + 1}, schema(calibrate), raise_on_error=True)


@pytest.mark.parametrize("flow", [specdec, train_draft, sweep, calibrate], ids=lambda f: f.name)
def test_a_flow_called_in_python_still_takes_a_profile_files_path(flow):
    """`specops run path/to/x.yaml` calls the flow: its own check (pydantic, on the call) is the type, a str."""
    path = str(profiles_dir() / "ngram-local.yaml")
    assert flow.validate_parameters({"profile": path})["profile"] == path
    assert flow.validate_parameters({"profile": path, "run_id": None})["run_id"] is None  # the CLI's "no --run-id"
    with pytest.raises(Exception, match="overrides"):
        flow.validate_parameters({"profile": path, "overrides": "benchmark.num_requests=8"})

"""The forms a deployment offers per pool, checked by the function the Prefect server runs on a new run's parameters
(prefect/utilities/schema_tools/validation.py validate, which create_flow_run_from_deployment turns into a 409)."""
from __future__ import annotations

import pytest
from prefect.utilities.callables import parameter_schema
from prefect.utilities.schema_tools.validation import ValidationError, validate

from flows.compare import compare
from flows.regression import regression
from flows.specdec import specdec
from prefect_adapters.forms import pool_choices
from specops.backends import needs_gpu
from specops.fleet.deployments import CPU_POOL, GPU_POOL
from specops.fleet.forms import narrowed
from specops.profile.loader import list_profile_names, load_profile

SHIPPED = list_profile_names()
# Overrides the suite and the README use, each a key of the profile schema with a value of its type.
GOOD = ["benchmark.num_requests=4", "benchmark.output_tokens=32", "benchmark.rounds=3", "benchmark.interleave=true",
        "benchmark.tool=aiperf", "benchmark.timeout_s=null", "benchmark.pairing=requests",
        "comparison.lossless_prompts=0", "comparison.baseline=false", "method.num_speculative_tokens=8",
        "method.prompt_lookup_min=2", "method.kind=suffix", "backend.draft_length=fixed",
        "backend.gpu_memory_utilization=0.5", "backend.engine_args.max_num_seqs=7", "serving.ready_timeout_s=0.1",
        "draft.train.data.num_samples=16", "draft.train.max_steps=3"]
BAD = {"num_requests 4": "is not valid under any of the given schemas",  # no key=value
       "benchmark.num_request=4": "is not valid under any of the given schemas",  # no such field
       # a value not of the field's type: the message names the field and the shape it takes
       "benchmark.num_requests=four": "num_requests=-?[0-9]+$'",
       "benchmark.interleave=maybe": "interleave=(?:true|false|",
       "benchmark.pairing=foo": "pairing=(?:auto|requests|rounds)$'"}


def form(flow, pool: str) -> dict:
    return narrowed(parameter_schema(flow).model_dump(), pool_choices()[pool], SHIPPED)


def refusal(params: dict, schema: dict) -> str | None:
    try:
        validate(params, schema, raise_on_error=True)
    except ValidationError as error:
        return str(error)
    return None


def test_each_pool_offers_the_profiles_its_workers_run_and_no_other():
    choices = pool_choices()
    assert sorted(choices[CPU_POOL] + choices[GPU_POOL]) == sorted(SHIPPED)
    for pool, gpu in ((CPU_POOL, False), (GPU_POOL, True)):
        offered = form(specdec, pool)["properties"]["profile"]["enum"]
        assert offered and all(needs_gpu(load_profile(n).profile.backend) is gpu for n in offered), (pool, offered)
        assert form(compare, pool)["properties"]["profiles"]["items"]["enum"] == offered
    assert "profile" in refusal({"profile": "eagle3-trtllm"}, form(specdec, CPU_POOL))
    assert refusal({"profile": "eagle3-trtllm"}, form(specdec, GPU_POOL)) is None


def test_a_regression_suite_keeps_every_profile_and_says_what_its_fields_are():
    schema = form(regression, CPU_POOL)
    entry = schema["definitions"]["SuiteEntry"]["properties"]
    assert entry["profile"]["enum"] == SHIPPED and entry["profile"]["description"]
    assert schema["properties"]["suite"]["description"] and entry["overrides"]["description"]
    assert refusal({"suite": [{"profile": "ngram-vllm", "overrides": GOOD}]}, schema) is None
    assert "suite[0].overrides[0]" in refusal({"suite": [{"profile": "ngram-local", "overrides": ["x 1"]}]}, schema)


def test_overrides_of_the_profile_schema_pass_and_others_are_refused_naming_the_field():
    schema = form(specdec, CPU_POOL)
    assert refusal({"profile": "ngram-local", "overrides": GOOD}, schema) is None
    for override, why in BAD.items():
        message = refusal({"profile": "ngram-local", "overrides": ["benchmark.rounds=2", override]}, schema)
        assert message and "field 'overrides[1]'" in message and why in message, (override, message)


@pytest.mark.parametrize("override", GOOD)
def test_what_the_form_accepts_the_loader_accepts(override):
    """The form refuses nothing the loader runs (here on a profile whose method and backend have the field)."""
    name = ("draft-target-local" if override.startswith("draft.") else
            "ngram-vllm-serve-cpu" if override.startswith("backend.") and "draft_length" not in override else
            "suffix-vllm-serve-cpu" if override == "method.kind=suffix" else "ngram-local")
    assert load_profile(name, [override]).overrides == (override,)

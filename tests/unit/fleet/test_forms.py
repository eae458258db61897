"""The forms a deployment offers per pool, checked by the function the Prefect server runs on a new run's parameters
(prefect/utilities/schema_tools/validation.py validate, which create_flow_run_from_deployment turns into a 409): every
refusal names the key, what it takes, or the nearest key (issue 51: a range passed the form and failed on the worker
30 s later; a refused key read `... is not valid under any of the given schemas` or a raw regular expression)."""
from __future__ import annotations

import functools
import re

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
from specops.profile.errors import ProfileError
from specops.profile.loader import list_profile_names, load_profile

SHIPPED = list_profile_names()
# Overrides the suite and the README use, each a key of the profile schema with a value of its type.
GOOD = ["benchmark.num_requests=4", "benchmark.output_tokens=32", "benchmark.rounds=3", "benchmark.interleave=true",
        "benchmark.tool=aiperf", "benchmark.timeout_s=null", "benchmark.pairing=requests",
        "comparison.lossless_prompts=0", "comparison.baseline=false", "method.num_speculative_tokens=8",
        "method.prompt_lookup_min=2", "method.kind=suffix", "backend.draft_length=fixed",
        "backend.gpu_memory_utilization=0.5", "backend.engine_args.max_num_seqs=7", "serving.ready_timeout_s=0.1",
        "draft.train.data.num_samples=16", "draft.train.max_steps=3",
        "benchmark.num_requests=0x10", "benchmark.num_requests=1_000", "serving.ready_timeout_s=1.5e+2"]
# override -> what the refusal says (after the override it quotes): the key, what it takes, or the nearest key
BAD = {"num_requests 4": "key=value: a profile key, `=`, then a YAML value, e.g. benchmark.num_requests=8",
       "benchmark.num_reqests=4": "no profile key; the nearest: benchmark.num_requests",
       "benchmark.nmu_requests=4": "no profile key; the nearest: benchmark.num_requests",
       "num_requests=4": "no profile key; the nearest: benchmark.num_requests",
       "benchmark.concurency=2": "no profile key; the nearest: benchmark.concurrency",
       "comparison.lossless_promts=1": "no profile key; the nearest: comparison.lossless_prompts",
       "benchmark.colour=red": "no key of benchmark; its keys: api, categories, concurrency, interleave, mix",
       "colour=red": "no profile key; a key is one of the sections name, description, method, backend",
       # a value not of the field's type or out of its bounds: the key and what it takes, in words
       "benchmark.num_requests=-3": "benchmark.num_requests: a whole number from 1 to 100000",
       "benchmark.num_requests=100001": "benchmark.num_requests: a whole number from 1 to 100000",
       "benchmark.num_requests=four": "benchmark.num_requests: a whole number from 1 to 100000",
       "benchmark.timeout_s=0": "benchmark.timeout_s: a number above 0 up to 86400 or null",
       "backend.gpu_memory_utilization=1.5": "backend.gpu_memory_utilization: a number above 0 up to 1 or null",
       "benchmark.interleave=maybe": "benchmark.interleave: true or false",
       "benchmark.pairing=foo": "benchmark.pairing: one of auto, requests, rounds",
       "method.kind=lookahead": "method.kind: one of draft-target, eagle, eagle3, medusa, ngram, none, suffix",
       "backend.engine_args.bomb=[&a x, *a]": "a value without a YAML alias or anchor (*name, &name)"}


@functools.cache
def form(flow, pool: str) -> dict:  # read only
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


def test_overrides_of_the_profile_schema_pass_and_others_are_refused_in_peoples_words():
    schema = form(specdec, CPU_POOL)
    assert refusal({"profile": "ngram-local", "overrides": GOOD}, schema) is None
    for override, why in BAD.items():
        message = refusal({"profile": "ngram-local", "overrides": ["benchmark.rounds=2", override]}, schema)
        assert message and "field 'overrides[1]'" in message, (override, message)
        assert message.split("Failure reason: ", 1)[1].startswith(f"{override!r} is not one of ['{why}"), message
        with pytest.raises(ProfileError):  # and the worker would have refused it too
            load_profile("ngram-vllm-serve-cpu", [override])


@pytest.mark.parametrize("key", ["benchmark.num_requests", "benchmark.warmup_requests", "benchmark.concurrency",
                                 "method.num_speculative_tokens", "comparison.lossless_prompts", "benchmark.rounds",
                                 "serving.ready_timeout_s", "method.min_token_prob"])
def test_the_forms_bounds_are_the_loaders(key):
    """At each bound and one step past it, the form and the loader agree (suffix-vllm-serve-cpu has every key)."""
    from specops.fleet.override_rules import override_shapes

    schema = form(specdec, CPU_POOL)
    (words,) = [shape.words for shown, shape in override_shapes().values() if shown == key]
    low, high = (float(n) for n in re.findall(r"[0-9]+(?:\.[0-9]+)?", words))
    step = 1 if "whole" in words else 0.01
    for value in (low, high, low - step, high + step):
        text = f"{value:g}" if "whole" in words else f"{value:.2f}"
        override = f"{key}={text}"
        try:
            load_profile("suffix-vllm-serve-cpu", [override])
            loads = True
        except ProfileError:
            loads = False
        refused = refusal({"profile": "suffix-vllm-serve-cpu", "overrides": [override]}, schema)
        assert (refused is None) is loads, (override, refused)


def test_what_only_the_profile_refuses_is_refused_at_creation_with_the_loaders_reason():
    """The deployment's own profile: its cross-field rules (the loader's, found by loading it with each value of
    its finite keys) and the keys of another method or backend, while the form keeps that profile."""
    schema = narrowed(parameter_schema(specdec).model_dump(), pool_choices()[CPU_POOL], SHIPPED, own="ngram-local")
    for override, why in (("method.prompt_lookup_min=5", "method: prompt_lookup_min (the value) must not exceed "
                           "prompt_lookup_max (3)"),
                          ("method.max_tree_depth=3", "not a key of its method ngram (kind, num_speculative_tokens"),
                          ("backend.engine_args.max_num_seqs=2", "nor of its backend local (draft_length")):
        message = refusal({"profile": "ngram-local", "overrides": [override]}, schema)
        assert message and "is not one of ['with profile ngram-local: " in message and why in message, message
        with pytest.raises(ProfileError):
            load_profile("ngram-local", [override])
    assert refusal({"profile": "ngram-local", "overrides": ["method.prompt_lookup_min=3"]}, schema) is None
    # another profile picked in the form: its own rules are the worker's to say, not the deployment profile's
    assert refusal({"profile": "draft-target-local", "overrides": ["method.max_tree_depth=3"]}, schema) is None


@pytest.mark.parametrize("override", GOOD)
def test_what_the_form_accepts_the_loader_accepts(override):
    """The form refuses nothing the loader runs (here on a profile whose method and backend have the field)."""
    name = ("draft-target-local" if override.startswith("draft.") else
            "ngram-vllm-serve-cpu" if override.startswith("backend.") and "draft_length" not in override else
            "suffix-vllm-serve-cpu" if override == "method.kind=suffix" else "ngram-local")
    assert load_profile(name, [override]).overrides == (override,)


def test_the_form_is_a_schema_the_uis_own_check_takes_and_shows_per_override():
    """The Custom run form asks the server to check its values (prefect/server/api/ui/schemas.py validate_obj): the
    schema must be valid (a bad pattern answers 422 and the form shows no refusal), and each override's refusal is
    shown at its own index."""
    from prefect.utilities.schema_tools.validation import build_error_obj, is_valid_schema, preprocess_schema

    schema = narrowed(parameter_schema(specdec).model_dump(), pool_choices()[CPU_POOL], SHIPPED, own="ngram-local")
    is_valid_schema(schema)
    is_valid_schema(form(regression, CPU_POOL))
    errors = validate({"profile": "ngram-local", "overrides": ["benchmark.rounds=2", "benchmark.num_requests=-3"]},
                      preprocess_schema(schema), preprocess=False)
    assert build_error_obj(errors)["errors"] == [{"property": "overrides", "errors": [{"index": 1, "errors": [
        "'benchmark.num_requests=-3' is not one of ['benchmark.num_requests: a whole number from 1 to 100000']"]}]}]

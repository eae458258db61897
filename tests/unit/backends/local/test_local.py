"""The embedded backend's rendered model config: method options, the draft, instances, draft length."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.pipeline.backend import backend_for
from specops.profile.loader import load_profile
from specops.run.variant import Variant, base_method, variants_of
from specops.sources.schemes import ModelArtifact
from specops.triton.model_config import ModelConfig

TARGET = ModelArtifact(Path("/models/target"), "embedded:smollm2-135m", "a" * 64)
DRAFT = ModelArtifact(Path("/cache/drafts/k/export"), "trained:eagle3", "b" * 64)


def _params(profile, variant: Variant, draft=None) -> dict[str, str]:
    config: ModelConfig = backend_for(profile)._config(variant, TARGET, draft)
    return {k: v.string_value for k, v in config.parameters.items()}


def test_trained_draft_reaches_the_runtime_with_the_methods_settings():
    profile = load_profile("eagle3-local").profile
    spec, base = variants_of(profile.method, profile.comparison.baseline)
    params = _params(profile, spec, DRAFT)
    assert params["method"] == "eagle3"
    assert json.loads(params["method_options"]) == {"draft_dir": "/cache/drafts/k/export", "num_speculative_tokens": 3}
    assert params["adaptive_draft_length"] == "true"
    base_params = _params(profile, base)
    assert base_params["method"] == "none" and json.loads(base_params["method_options"]) == {}


def test_fixed_draft_length_and_instances_are_rendered():
    profile = load_profile("medusa-local", ["backend.draft_length=fixed", "backend.instances=2"]).profile
    spec, _ = variants_of(profile.method, profile.comparison.baseline)
    config = backend_for(profile)._config(spec, TARGET, DRAFT)
    assert config.instance_group[0].count == 2
    assert config.parameters["adaptive_draft_length"].string_value == "false"
    options = json.loads(config.parameters["method_options"].string_value)
    assert options == {"draft_dir": str(DRAFT.path), "num_speculative_tokens": 2}  # no medusa_choices: None dropped


def test_synthesis_variant_runs_as_many_instances_as_requests_in_flight():
    profile = load_profile("eagle3-local").profile
    synthesis = Variant("synthesis", base_method(), parallel=profile.draft.train.data.concurrency)
    config = backend_for(profile)._config(synthesis, TARGET, None)
    assert config.instance_group[0].count == 2 and config.name == "synthesis"


def test_what_the_runtimes_ngram_proposer_refuses_the_profile_refuses_naming_its_default():
    """An unset prompt_lookup_min is the runtime's 2 (NgramProposer.Options): a max of 1 alone cannot be served;
    vLLM would take the max for it, so the refusal is the embedded backend's, at load, not at server start."""
    from specops.profile.errors import ProfileError
    from specops.profile.loader import load_profile

    with pytest.raises(ProfileError) as err:
        load_profile("ngram-local", ["method.prompt_lookup_min=null", "method.prompt_lookup_max=1"])
    assert "the embedded runtime cannot serve it" in str(err.value)
    assert "prompt_lookup_min=2 > prompt_lookup_max=1" in str(err.value) and "'prompt_lookup_min': 2" in str(err.value)
    assert load_profile("ngram-local", ["method.prompt_lookup_min=null", "method.prompt_lookup_max=2"])
    assert load_profile("ngram-vllm-serve-cpu", ["method.prompt_lookup_min=null", "method.prompt_lookup_max=1"])

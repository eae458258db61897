"""specops.backends.vllm.engine.engine_args: every backend.engine_args key and gpu_memory_utilization a profile
sets reaches the engine - model.json (backend vllm) and serve.yaml (backend vllm-serve), container and process
launch - and an engine arg the serving vLLM lacks is refused at load, naming backend.engine_args and the key.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from specops.backends.vllm import cpu as vllm_cpu
from specops.backends.vllm.serve import CONFIG_NAME
from specops.pipeline.backend import backend_for
from specops.profile.errors import ProfileError
from specops.run.variant import variants_of

ROOT = Path(__file__).resolve().parents[4]

# Engine args of several types, each a key every vLLM these profiles serve has (0.27.1 in the 26.08 image,
# 0.32.0 in vllm/vllm-openai:v0.32.0 and on the CPU): int, false, string, dict, and one the CPU profiles
# already set (enforce_eager true -> false).
ENGINE_ARGS = ("max_num_seqs=8", "enable_prefix_caching=false", "kv_cache_dtype=auto", "seed=7",
               "override_generation_config={max_new_tokens: 8, repetition_penalty: 1.0}", "enforce_eager=false")
GPU_MEMORY = "0.85"
PROFILES = {  # profile -> (backend, launch)
    "ngram-vllm": ("vllm", "container"),
    "ngram-vllm-cpu": ("vllm", "process"),
    "ngram-vllm-serve": ("vllm-serve", "container"),
    "ngram-vllm-serve-cpu": ("vllm-serve", "process"),
}


def overrides(args=ENGINE_ARGS) -> tuple[str, ...]:
    return (*(f"backend.engine_args.{a}" for a in args), f"backend.gpu_memory_utilization={GPU_MEMORY}")


def rendered(profile, variant) -> dict:
    """The engine args the variant's server is given, read back from the file the backend writes."""
    files = backend_for(profile).all_files(variant, None, None)
    if CONFIG_NAME in files:
        return {key.replace("-", "_"): value for key, value in yaml.safe_load(files[CONFIG_NAME]).items()}
    return json.loads(files[f"{variant.model_name}/1/model.json"])


@pytest.mark.parametrize("name", list(PROFILES))
def test_every_engine_arg_and_gpu_memory_utilization_reaches_the_engine(load_gpu_profile, name):
    profile = load_gpu_profile(name, overrides())
    backend, launch = PROFILES[name]
    assert (profile.backend.kind, profile.backend.launch) == (backend, launch)
    asked = dict(profile.backend.engine_args)
    # the overrides took (and the CPU profiles' own device settings are still there)
    assert {a.split("=", 1)[0] for a in ENGINE_ARGS} <= set(asked)
    assert profile.backend.gpu_memory_utilization == float(GPU_MEMORY)
    for variant in variants_of(profile.method, profile.comparison.baseline):
        args = rendered(profile, variant)
        for key, value in asked.items():
            assert key in args, f"{name} {variant.name}: engine_args.{key} dropped"
            assert args[key] == value and type(args[key]) is type(value), (name, variant.name, key, args[key])
        assert args["gpu_memory_utilization"] == profile.backend.gpu_memory_utilization


def test_flat_keys_of_an_old_vllm_keep_every_engine_arg_too(load_gpu_profile):
    """vLLM <= 0.8.1 (25.02: vLLM 0.7.0) gets the flat speculative_* keys from another code path."""
    args = [a for a in ENGINE_ARGS if not a.startswith("override_generation_config")]  # not in 0.7.0
    profile = load_gpu_profile("eagle-vllm", overrides(args))
    variant = variants_of(profile.method, profile.comparison.baseline)[0]
    got = rendered(profile, variant)
    assert "speculative_model" in got  # the flat path
    for key, value in profile.backend.engine_args.items():
        assert got[key] == value
    assert got["gpu_memory_utilization"] == float(GPU_MEMORY)


def test_engine_args_come_after_what_specops_writes(load_gpu_profile):
    """model, speculative_config and the parallel/memory settings first, then the profile's engine_args in
    the profile's order."""
    profile = load_gpu_profile("ngram-vllm-cpu", overrides())
    variant = variants_of(profile.method, profile.comparison.baseline)[0]
    keys = list(rendered(profile, variant))
    assert keys[:3] == ["model", "gpu_memory_utilization", "speculative_config"]
    assert keys[3:] == list(profile.backend.engine_args)


# --- the n-gram window: both ends, whenever the profile states them ------------------------------------------

@pytest.mark.parametrize("name", list(PROFILES))
def test_the_ngram_window_the_profile_states_is_rendered_at_both_ends(load_gpu_profile, name):
    """vLLM would otherwise pick its own minimum (the maximum, from 0.8.4: SpeculativeConfig.__post_init__), so
    both ends reach the engine as stated, and the base variant gets no speculation at all."""
    profile = load_gpu_profile(name, ("method.prompt_lookup_min=2", "method.prompt_lookup_max=5"))
    spec, base = variants_of(profile.method, profile.comparison.baseline)
    window = rendered(profile, spec)["speculative_config"]
    assert (window["method"], window["prompt_lookup_min"], window["prompt_lookup_max"]) == ("ngram", 2, 5)
    assert window["num_speculative_tokens"] == profile.method.num_speculative_tokens
    assert "speculative_config" not in rendered(profile, base)
    own = load_gpu_profile(name)  # what the YAML states: ngram-local's window and K
    shipped = rendered(own, variants_of(own.method, own.comparison.baseline)[0])["speculative_config"]
    assert (shipped["prompt_lookup_min"], shipped["prompt_lookup_max"], shipped["num_speculative_tokens"]) == (2, 3, 4)


def test_the_flat_keys_of_an_old_vllm_state_both_ends_too(load_gpu_profile):
    old = "backend.image=nvcr.io/nvidia/tritonserver:25.02-vllm-python-py3"  # vLLM 0.7.0: flat keys
    profile = load_gpu_profile("ngram-vllm", (old, "method.prompt_lookup_min=2", "method.prompt_lookup_max=5"))
    args = rendered(profile, variants_of(profile.method, profile.comparison.baseline)[0])
    assert args["speculative_model"] == "[ngram]" and "speculative_config" not in args
    assert (args["ngram_prompt_lookup_min"], args["ngram_prompt_lookup_max"]) == (2, 5)
    unset = load_gpu_profile("ngram-vllm", (old, "method.prompt_lookup_min=null"))
    args = rendered(unset, variants_of(unset.method, unset.comparison.baseline)[0])
    assert "ngram_prompt_lookup_min" not in args and args["ngram_prompt_lookup_max"] == 3  # left to vLLM: warned


# --- an engine arg the serving vLLM lacks ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ngram-vllm-cpu", "ngram-vllm-serve-cpu"])
def test_an_engine_arg_the_cpu_vllm_lacks_is_refused_at_load(load_gpu_profile, name):
    with pytest.raises(ProfileError) as err:
        load_gpu_profile(name, ("backend.engine_args.not_an_arg=1",))
    assert [field for field, _ in err.value.problems] == ["backend.engine_args"], err.value
    message = str(err.value)
    for needle in ("not_an_arg", f"vLLM {vllm_cpu.version()}", "launch: process", "no vLLM specops knows has it"):
        assert needle in message, (needle, message)
    assert f"profiles/{name}.yaml" in message and "--set backend.engine_args.not_an_arg=1" in message


def test_the_cpu_engines_version_decides_not_the_image(load_gpu_profile):
    """An arg first in vLLM 0.32.0: the CPU profile (vllm-cpu 0.32.0) takes it, its GPU twin on the 26.08 image
    (vLLM 0.27.1) refuses it naming the versions that have it."""
    from specops.versions.vllm import vllm_releases

    releases = vllm_releases()
    newer = sorted(releases["0.32.0"].engine_args - releases["0.27.1"].engine_args)
    key = next(k for k in newer if k == "per_request_spec_decode_metrics")
    cpu = load_gpu_profile("ngram-vllm-cpu", (f"backend.engine_args.{key}=summary",))
    assert cpu.backend.engine_args[key] == "summary"
    with pytest.raises(ProfileError, match=rf"vLLM 0\.27\.1 .*no engine arg {key} .*vLLM 0\.32\.0 \.\. 0\.32\.0 have it"):
        load_gpu_profile("ngram-vllm", (f"backend.engine_args.{key}=summary",))


@pytest.mark.slow  # a fresh interpreter importing the CLI (3-6 s)
@pytest.mark.parametrize("name", ["ngram-vllm-cpu", "ngram-vllm-serve-cpu"])
def test_the_cli_reports_the_unknown_engine_arg_as_a_profile_error(tmp_path, name):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "HF_"))}
    env.update(SPECOPS_ARTIFACTS=str(tmp_path / "artifacts"), SPECOPS_CACHE=str(tmp_path / "cache"),
               PREFECT_HOME=str(tmp_path / "prefect"), HF_HOME=str(tmp_path / "hf-home"))
    done = subprocess.run([sys.executable, "-m", "cli", "plan", name, "--set", "backend.engine_args.not_an_arg=1"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr  # EXIT_PROFILE (tests/unit/cli/test_bad_input.py)
    assert "Traceback" not in done.stderr + done.stdout
    for needle in ("backend.engine_args", "not_an_arg", f"vLLM {vllm_cpu.version()}"):
        assert needle in done.stderr, (needle, done.stderr)

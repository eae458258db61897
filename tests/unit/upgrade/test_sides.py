"""The upgrade check's sides: backend overrides only, two different engines, version facts from the data;
the default pair each deployment runs, and the deployments themselves."""
from __future__ import annotations

import pytest

from specops.fleet.deployments import CPU_POOL, GPU_POOL, UPGRADE, upgrade_deployments
from specops.profile.errors import ProfileError
from specops.profile.loader import list_profile_names, load_profile
from specops.upgrade.defaults import CPU_REFERENCE, default_sides, older_images
from specops.upgrade.sides import changes_engine, load_sides
from specops.versions.images import image_info
from specops.versions.store import load, parse

OLD_TRITON = "nvcr.io/nvidia/tritonserver:25.04-vllm-python-py3"


def test_a_side_setting_anything_but_the_backend_is_refused_naming_the_side():
    with pytest.raises(ProfileError) as err:
        load_sides("ngram-vllm-serve-cpu", [], ["backend.engine_args={dtype: float32}", "benchmark.rounds=3"], [])
    assert "--after: benchmark.rounds=3: a side sets only backend fields" in str(err.value)
    assert "engine_args" not in str(err.value)


def test_two_sides_on_one_engine_are_refused():
    with pytest.raises(ProfileError, match="both sides resolve to the same backend settings"):
        load_sides("ngram-vllm-serve-cpu", ["backend.launch=process"], [], ["benchmark.num_requests=4"])


def test_the_cpu_pair_pins_what_the_vllm_cpu_data_says():
    before, after = load_sides("ngram-vllm-serve-cpu", [CPU_REFERENCE], [], ["benchmark.num_requests=4"])
    cpu = load("vllm_cpu")
    assert (before.backend, before.pinned) == ("local", {})
    assert after.backend == "vllm-serve" and after.pinned[cpu["distribution"]] == str(cpu["version"])
    assert after.pinned["torch"] == "==2.13.0"
    assert before.overrides == ("benchmark.num_requests=4", CPU_REFERENCE)  # shared first, the side's own last


def test_an_image_pair_pins_what_the_image_matrix_says():
    before, after = load_sides("ngram-vllm", [f"backend.image={OLD_TRITON}"], [], [])
    assert before.pinned == {fw: pin.version for fw, pin in image_info(OLD_TRITON).pins.items()}
    assert before.pinned["vllm"] != after.pinned["vllm"]


def test_default_sides_derive_from_the_version_data():
    assert default_sides(load_profile("ngram-vllm-serve-cpu").profile) == ([CPU_REFERENCE], [])
    assert default_sides(load_profile("ngram-local").profile) is None  # the reference engine itself
    gpu = load_profile("ngram-vllm").profile
    before, after = default_sides(gpu)
    older = before[0].partition("=")[2]
    assert after == [] and older == older_images(gpu.backend)[0]
    assert parse(image_info(older).version("vllm")) < parse(gpu.backend.release())


def test_upgrade_deployments_run_on_the_pool_of_their_profile_with_the_default_sides():
    profiles = [load_profile(name).profile for name in list_profile_names()]
    deployments = {d["name"]: d for d in upgrade_deployments(profiles)}
    cpu, gpu = deployments["ngram-vllm-serve-cpu"], deployments["ngram-vllm"]
    assert cpu["entrypoint"] == UPGRADE and cpu["work_pool"]["name"] == CPU_POOL
    assert cpu["parameters"] == {"profile": "ngram-vllm-serve-cpu", "before": [CPU_REFERENCE], "after": []}
    assert gpu["work_pool"]["name"] == GPU_POOL and gpu["parameters"]["before"][0].startswith("backend.image=")
    assert "ngram-local" not in deployments


def test_only_a_side_on_another_engine_leaves_the_profiles_history():
    assert changes_engine(["benchmark.num_requests=4", "backend={kind: local}"])
    assert changes_engine(["backend.image=nvcr.io/nvidia/tritonserver:25.04-vllm-python-py3"])
    assert not changes_engine(["benchmark.num_requests=4", "method.num_speculative_tokens=3"])
    assert not changes_engine([])

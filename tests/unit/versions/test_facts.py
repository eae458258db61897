"""The version facts are regular, cite their sources, and agree with the image matrix."""
from __future__ import annotations

from specops.backends.trtllm.config import TrtllmBackendConfig
from specops.backends.trtllm.engine_config import TrtllmEngineBackendConfig
from specops.backends.trtllm.serve_config import TrtllmServeBackendConfig
from specops.backends.vllm.config import VllmBackendConfig
from specops.versions.engine import engine_releases, servable_versions
from specops.versions.images import known_images
from specops.versions.store import load
from specops.versions.trtllm import trtllm_releases
from specops.versions.vllm import vllm_backend_model, vllm_releases


def test_vllm_facts_come_from_checksummed_archives():
    table = load("vllm")["versions"]
    for version, row in table.items():
        assert row["source"]["url"].startswith("https://files.pythonhosted.org/") and len(row["source"]["sha256"]) == 64
        for key in ("engine_args", "sampling_params", "speculative_methods"):
            assert row[key] == sorted(row[key]) and row[key], (version, key)
        for fmt in row["spec_decode_log"]["formats"]:
            assert fmt["where"] and fmt["format"] and fmt["sample"], version
    # the nested form replaces the flat keys between 0.8.1 and 0.8.4 and stays
    releases = vllm_releases()
    assert [v for v, r in releases.items() if r.flat] == ["0.6.3.post1", "0.7.0", "0.7.3", "0.8.1"]
    assert all(r.nested for v, r in releases.items() if not r.flat)


def test_every_vllm_image_has_facts_or_is_refused_with_them_named():
    images = known_images("vllm", "tritonserver", "vllm-python-py3")
    servable = VllmBackendConfig.known_images()
    assert set(servable) <= set(images)
    # every image carries a vLLM whose archive was read (the 0.9.0rc1 builds through their release)
    assert sorted(set(images) - set(servable)) == []
    for image in images:
        assert vllm_backend_model(image.rsplit(":", 1)[1][:5]) is not None, image


def test_vllm_backend_reads_what_it_declares():
    for release, row in load("triton_vllm")["releases"].items():
        assert set(row["model_inputs_read"]) <= set(row["model_inputs_declared"]), release
        assert row["vllm_backend_ref"], release


def test_trtllm_table_is_regular_and_points_at_its_research():
    doc = load("trtllm")
    for version, release in trtllm_releases().items():
        assert set(release.decoding_fields) - {"base"} <= release.decoding_types, version
        assert release.model_keys and set(release.model_keys) <= release.decoding_fields["base"], version
        research = release.research.split(" ")[0].removeprefix("research.")
        assert research in doc["research"], version
        assert {"model", "speculative_config", "tensor_parallel_size"} <= release.llm_args, version
        assert not release.llm_args & release.llm_args_absent, version
    # the tutorial's spelling arrives with 1.3 (PRs #10124, #10099), after every tritonserver image's release
    assert [v for v, r in trtllm_releases().items() if "Eagle3" in r.decoding_types] == ["1.3.0rc12"]


def test_trtllm_images_map_to_facts_where_specops_serves_them():
    served = {image.rsplit(":", 1)[1][:5] for image in TrtllmBackendConfig.known_images()}
    assert {"25.12", "26.04", "26.07"} <= served
    assert "25.11" not in served  # NVIDIA's matrix says 1.0.3.2510, a build specops has no facts for
    assert TrtllmServeBackendConfig.known_images() == ["nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6",
                                                     "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc12"]


def test_engine_path_serves_only_releases_read_at_the_release():
    assert servable_versions() == ["0.17.0", "0.18.0", "0.18.2", "0.19.0"]
    for version in servable_versions():
        release = engine_releases()[version]
        models = {"ensemble", "tensorrt_llm", "tensorrt_llm_bls", "preprocessing", "postprocessing"}
        assert models <= set(release.models)
        assert {"eagle", "medusa", "llama"} == set(release.convert_flags)
    images = [i.rsplit(":", 1)[1][:5] for i in TrtllmEngineBackendConfig.known_images()]
    assert images == ["25.01", "25.02", "25.03", "25.04", "25.05"]
    # acceptance outputs arrive with tensorrtllm_backend v0.19.0
    assert [v for v in servable_versions() if engine_releases()[v].perf_metrics_input] == ["0.19.0"]

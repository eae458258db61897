"""prefect.yaml has one deployment per shipped profile, each pointing at the specdec flow."""
from __future__ import annotations

from pathlib import Path

import yaml

from specops.backends import BACKENDS
from specops.profile.loader import list_profile_names, load_profile

ROOT = Path(__file__).resolve().parents[2]


def test_one_deployment_per_profile():
    doc = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployments = {d["name"]: d for d in doc["deployments"]}
    assert sorted(deployments) == list_profile_names()
    for name, d in deployments.items():
        assert d["entrypoint"] == "flows/specdec.py:specdec"
        assert d["parameters"]["profile"] == name
        assert load_profile(name).profile.name == name  # deployment name = profile name
        gpu = BACKENDS.get(load_profile(name).profile.backend.kind).needs_gpu
        assert d["work_pool"]["name"] == ("specops-gpu" if gpu else "specops-cpu")


def test_entrypoint_is_the_specdec_flow():
    from flows.specdec import specdec

    assert specdec.name == "specdec"

"""prefect.yaml has one deployment per shipped profile, each pointing at the specdec flow."""
from __future__ import annotations

from pathlib import Path

import yaml

from specops.backends import BACKENDS
from specops.profile.loader import list_profile_names, load_profile

ROOT = Path(__file__).resolve().parents[2]


def _deployments(entrypoint: str) -> dict[str, dict]:
    doc = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    return {d["name"]: d for d in doc["deployments"] if d["entrypoint"] == entrypoint}


def test_every_deployment_runs_a_known_flow():
    doc = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    assert {d["entrypoint"] for d in doc["deployments"]} == {
        "flows/specdec.py:specdec", "flows/train_draft.py:train_draft"}


def test_one_train_draft_deployment_per_trainable_profile():
    deployments = _deployments("flows/train_draft.py:train_draft")
    trainable = [n for n in list_profile_names()
                 if (p := load_profile(n).profile).draft is not None and p.draft.train is not None]
    assert trainable and sorted(deployments) == trainable
    for name, d in deployments.items():
        assert d["parameters"]["profile"] == name
        assert d["work_pool"]["name"] == "specops-cpu"


def test_train_draft_flow_is_named_for_the_deployments():
    from flows.train_draft import train_draft

    assert train_draft.name == "train-draft"


def test_one_deployment_per_profile():
    deployments = _deployments("flows/specdec.py:specdec")
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

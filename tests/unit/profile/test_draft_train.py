"""`draft.train` in profiles: refused before any download when the mode, options or data are wrong."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile

ROOT = Path(__file__).resolve().parents[3]
TRAINED = ["eagle3-local", "eagle-local", "medusa-local", "draft-target-local"]


@pytest.mark.parametrize("name,mode", zip(TRAINED, ["eagle3", "eagle", "medusa", "distill"]))
def test_shipped_trained_profiles_resolve_their_mode(name, mode):
    profile = load_profile(name).profile
    assert profile.draft.source is None and profile.draft.train.mode == mode
    assert profile.draft.train.data.humaneval_holdout >= profile.benchmark.num_requests


def test_mode_defaults_from_the_method():
    profile = load_profile("eagle3-local", ["draft.train.mode=null"]).profile
    assert profile.draft.train.mode == "eagle3"


@pytest.mark.parametrize("overrides,message", [
    # eagle3-local's own options are EAGLE options, which a medusa mode refuses first.
    (["draft.train.mode=medusa", "draft.train.options={}"], "draft.train.mode: method 'eagle3' serves a draft trained in mode 'eagle3', not 'medusa'"),
    (["draft.train.mode=eagle4"], "draft.train.mode: unknown ModelOpt mode 'eagle4'; allowed: eagle3, eagle, medusa, distill"),
    (["draft.train.options={eagle_ttt_stepz: 2}"], "unknown option 'eagle_ttt_stepz'; allowed: eagle_export_rope_scaling"),
    (["draft.train.options={eagle_use_torch_compile: true}"], "'eagle_use_torch_compile' cannot be set"),
    (["draft.source=hf://a/b"], "draft: give exactly one of 'source' (a checkpoint) or 'train' (train it here)"),
    (["draft.train.data.prompts=[]"], "no prompt source"),
    (["draft.train.data.prompts=[wikipedia]"], "draft.train.data.prompts.0: Input should be 'humaneval' or 'stdlib'"),
    (["benchmark.num_requests=80"], "draft.train.data.humaneval_holdout: the benchmark and lossless check use HumanEval prompts 0..84"),
    (["draft.train.data.endpoint=ftp://x"], "endpoint must start with http:// or https://"),
])
def test_bad_training_sections_are_refused(overrides, message):
    with pytest.raises(ProfileError) as info:
        load_profile("eagle3-local", overrides)
    assert "profiles/eagle3-local.yaml" in str(info.value)
    assert message in str(info.value)


def test_medusa_trees_are_refused_by_the_embedded_runtime():
    with pytest.raises(ProfileError, match="method.medusa_choices: the embedded runtime verifies one chain"):
        load_profile("medusa-local", ["method.medusa_choices=[[0], [0, 0]]"])


@pytest.mark.parametrize("content,message", [
    ("", "empty"),
    ('{"conversations": [{"from": "User", "value": "hi"}]}\n{"conversations": [\n', "line 2"),
])
def test_bad_conversation_file_stops_plan_before_any_download(tmp_path, content, message):
    data = tmp_path / "talks.jsonl"
    data.write_text(content)
    cache = tmp_path / "cache"
    proc = subprocess.run(
        [sys.executable, "-m", "cli", "plan", "eagle3-local", "--set", f"draft.train.data.conversations={data}"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, env={**os.environ, "SPECOPS_CACHE": str(cache)})
    assert proc.returncode == 2, proc.stderr
    assert "draft.train.data.conversations" in proc.stderr and str(data) in proc.stderr and message in proc.stderr
    assert not cache.exists()

"""Cache keys follow content, not run ids or paths, and die with the cache directory."""
from __future__ import annotations

import shutil
from types import SimpleNamespace

from prefect import task

from specops.sources.base import ModelArtifact
from tasks.caching import ContentKey, canonical


def ctx():
    @task
    def some_task(x):  # the policy reads the task's name and source
        return x

    return SimpleNamespace(task=some_task)


def key(policy, cache_dir, **inputs):
    return policy.compute_key(ctx(), {"cache_dir": cache_dir, **inputs}, {})


def test_key_follows_model_content_not_path(tmp_path):
    policy = ContentKey(recipe="1")
    a = ModelArtifact(tmp_path / "a", "embedded:x", "sha-1")
    moved = ModelArtifact(tmp_path / "b", "embedded:x", "sha-1")
    changed = ModelArtifact(tmp_path / "a", "embedded:x", "sha-2")
    assert key(policy, tmp_path, m=a) == key(policy, tmp_path, m=moved)
    assert key(policy, tmp_path, m=a) != key(policy, tmp_path, m=changed)


def test_recipe_version_and_cache_generation_change_the_key(tmp_path):
    k1 = key(ContentKey(recipe="1"), tmp_path / "c", x=1)
    assert k1 != key(ContentKey(recipe="2"), tmp_path / "c", x=1)
    assert k1 == key(ContentKey(recipe="1"), tmp_path / "c", x=1)
    shutil.rmtree(tmp_path / "c")  # a deleted cache must not hand back dead paths
    assert k1 != key(ContentKey(recipe="1"), tmp_path / "c", x=1)


def test_sets_hash_in_a_stable_order():
    assert canonical({"s": {"b", "a", "c"}}) == {"s": ["a", "b", "c"]}

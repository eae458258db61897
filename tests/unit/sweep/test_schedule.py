"""Recommendations: profile overrides always; the backend's per-load draft-length key only where the framework
version its profile pins has it, spelled and shaped as data/draft_schedules.yaml says."""
from __future__ import annotations

from bisect import bisect_left

import pytest
import yaml

from specops.backends import BACKENDS
from specops.backends.base import Deployment, make_backend
from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile
from specops.run.variant import Variant
from specops.sweep.schedule import FIELDS, recommend, schedule_facts
from specops.versions.vllm import vllm_release

BEST = {1: 4, 2: 2, 4: None}


def vllm_lookup(schedule: list[list[int]], max_k: int, batch: int) -> int:
    """K for a batch size as vLLM 0.24.0's build_dynamic_sd_schedule_lookup assigns it: inclusive ranges, gaps
    and the tail keep the previous K, clamped to num_speculative_tokens."""
    k = None
    for start, _end, value in sorted(schedule):
        if start > batch:
            break
        k = value
    return min(max_k, k)


def trtllm_lookup(schedule: dict[int, int], batch: int) -> int:
    """K for a batch size as TensorRT-LLM's get_draft_len_for_batch_size (PR #10860): the first key >= batch."""
    keys = sorted(schedule)
    i = bisect_left(keys, batch)
    return schedule[keys[i]] if i < len(keys) else 0


def image_with_key(backend: str) -> str:
    """An image the backend can run whose framework version has the schedule key (from the version data)."""
    config_model = BACKENDS.get(backend).config_model
    fact = next(f for f in schedule_facts().values() if backend in f.backends)
    fields_of, _ = FIELDS[fact.framework]
    for image in config_model.known_images():
        version = config_model.model_construct(image=image, framework_version=None).release()
        if fact.key in (fields_of(version) or ()):
            return image
    raise AssertionError(f"no {backend} image with {fact.key}")


def test_the_embedded_backend_gets_overrides_only():
    r = recommend(load_profile("ngram-local"), BEST)
    assert r.profile_overrides == {1: ["method.num_speculative_tokens=4"], 2: ["method.num_speculative_tokens=2"]}
    assert r.base == [4] and r.backend_keys is None and r.backend_source is None and r.framework is None
    assert any("concurrency 4" in n and "serve without speculation" in n for n in r.notes)


def test_vllm_at_the_pinned_version_says_it_has_no_schedule_and_from_which_version():
    loaded = load_profile("eagle-vllm-nested")
    version = loaded.profile.backend.release()
    assert "num_speculative_tokens_per_batch_size" not in vllm_release(version)[0].speculative_config
    r = recommend(loaded, BEST)
    assert r.backend_keys is None and r.framework == f"vLLM {version}"
    assert r.profile_overrides[1] == ["method.num_speculative_tokens=4"]
    note = next(n for n in r.notes if "no per-batch-size K" in n)
    assert f"vLLM {version}" in note and "from vLLM 0.24.0" in note and "26.07-vllm-python-py3" in note


def test_vllm_with_the_key_renders_the_schedule_the_data_describes():
    image = image_with_key("vllm")
    loaded = load_profile("eagle-vllm-nested", [f"backend.image={image}"])
    version = loaded.profile.backend.release()
    fact = schedule_facts()["vllm"]
    assert fact.key in vllm_release(version)[0].speculative_config
    r = recommend(loaded, BEST)
    section = r.backend_keys[fact.under]
    assert set(section) == {fact.key, fact.max_key}
    schedule, max_k = section[fact.key], section[fact.max_key]
    assert all(isinstance(e, list) and len(e) == 3 and all(isinstance(v, int) for v in e) for e in schedule)
    assert schedule[0][0] == 1 and all(a[1] < b[0] for a, b in zip(schedule, schedule[1:]))
    assert max_k == max(e[2] for e in schedule)
    assert {c: vllm_lookup(schedule, max_k, c) for c in BEST} == {1: 4, 2: 2, 4: 0}
    assert vllm_lookup(schedule, max_k, 3) == 2  # between measured points: the lower one's K
    assert "draft_schedules.yaml schedules.vllm" in r.backend_source


def test_trtllm_serve_at_its_pinned_release_renders_draft_len_schedule():
    loaded = load_profile("eagle3-trtllm-serve-long-context")
    fact = schedule_facts()["tensorrt-llm"]
    fields_of, _ = FIELDS["tensorrt-llm"]
    assert fact.key in fields_of(loaded.profile.backend.release())
    r = recommend(loaded, BEST)
    section = r.backend_keys[fact.under]
    schedule, max_len = section[fact.key], section[fact.max_key]
    assert all(isinstance(b, int) and isinstance(k, int) for b, k in schedule.items())
    assert schedule[1] == max_len == 4 and all(k <= max_len for k in schedule.values())
    assert {c: trtllm_lookup(schedule, c) for c in BEST} == {1: 4, 2: 2, 4: 0}
    assert trtllm_lookup(schedule, 3) == 2


def test_trtllm_lowers_later_draft_lengths_to_the_batch_size_1_one():
    r = recommend(load_profile("eagle3-trtllm-serve-long-context"), {1: 2, 4: 3})
    section = r.backend_keys["speculative_config"]
    assert section["max_draft_len"] == 2 and max(section["draft_len_schedule"].values()) == 2
    assert any("lowered" in n for n in r.notes)


def test_trtllm_triton_at_1_2_1_has_no_schedule():
    r = recommend(load_profile("eagle3-trtllm"), BEST)
    assert r.backend_keys is None and r.framework == "TensorRT-LLM 1.2.1"
    assert any("no per-batch-size K" in n and "from TensorRT-LLM 1.3.0rc12" in n for n in r.notes)


def test_when_nothing_pays_there_is_no_schedule_to_render():
    image = image_with_key("vllm")
    r = recommend(load_profile("eagle-vllm-nested", [f"backend.image={image}"]), {1: None, 2: None})
    assert r.backend_keys is None and r.profile_overrides == {} and r.base == [1, 2]


@pytest.mark.parametrize("framework", sorted(schedule_facts()))
def test_every_schedule_fact_names_registered_backends_of_its_framework(framework):
    fact = schedule_facts()[framework]
    assert fact.backends and fact.evidence and fact.shape in ("inclusive-ranges", "upper-bounds")
    for name in fact.backends:
        assert BACKENDS.get(name).config_model.framework == fact.framework
    fields_of, versions = FIELDS[framework]
    assert any(fact.key in (fields_of(v) or ()) for v in versions()), "no version in the data has the key"
    assert any(fact.max_key in (fields_of(v) or ()) for v in versions())


@pytest.mark.parametrize("profile", ["ngram-vllm-serve-cpu", "ngram-vllm-cpu", "ngram-vllm-serve"])
def test_a_recommended_vllm_schedule_loads_back_and_renders_what_vllm_will_look_up(profile):
    """The schedule as profile overrides (what a sweep serves): loaded, it renders the recommended keys under
    speculative_config, and vLLM's lookup over them gives the best K at every concurrency measured."""
    r = recommend(load_profile(profile), BEST)
    assert r.schedule_overrides is not None
    loaded = load_profile(profile, r.schedule_overrides).profile
    keys = r.backend_keys["speculative_config"]
    assert loaded.method.num_speculative_tokens == keys["num_speculative_tokens"]
    assert [list(x) for x in loaded.backend.draft_schedule] == keys["num_speculative_tokens_per_batch_size"]

    p = loaded
    backend = make_backend(p.backend, Deployment(p.name, p.serving, p.target.source))
    files = backend.all_files(Variant("speculative", p.method), None, None)
    rendered = next(v for k, v in files.items() if k.endswith(("model.json", "serve.yaml")))
    doc = yaml.safe_load(rendered)  # model.json is YAML too
    spec = doc.get("speculative_config") or doc["speculative-config"]
    for c, k in BEST.items():
        assert vllm_lookup(spec["num_speculative_tokens_per_batch_size"], spec["num_speculative_tokens"], c) == (k or 0)


def test_backends_without_a_profile_field_for_the_schedule_get_no_overrides():
    assert recommend(load_profile("eagle3-trtllm"), BEST).schedule_overrides is None
    assert recommend(load_profile("ngram-local"), BEST).schedule_overrides is None


@pytest.mark.parametrize(("schedule", "message"), [
    ("[[2,2,3]]", "start at 1"), ("[[1,3,3],[2,4,1]]", "do not overlap"), ("[[1,1,9]]", "above method"),
    ("[]", "empty schedule"), ("[[3,1,2]]", "first <= last")])
def test_a_bad_schedule_is_refused_at_load_naming_the_field(schedule, message):
    with pytest.raises(ProfileError, match=message) as err:
        load_profile("ngram-vllm-serve-cpu", [f"backend.draft_schedule={schedule}"])
    assert "backend.draft_schedule" in str(err.value)


def test_a_schedule_on_a_vllm_without_the_key_is_refused_naming_the_first_version_with_it():
    with pytest.raises(ProfileError, match="has no num_speculative_tokens_per_batch_size; first in vLLM 0.24.0"):
        load_profile("draft-target-vllm-nested", ["backend.draft_schedule=[[1,1,5]]"])


MIN1, MIN2 = ("method.prompt_lookup_min=1", "method.prompt_lookup_max=5"), ("method.prompt_lookup_min=2",
                                                                           "method.prompt_lookup_max=5")


def test_settings_differing_in_more_than_k_get_their_overrides_and_no_schedule():
    r = recommend(load_profile("ngram-vllm-serve-cpu"), BEST, settings={1: MIN1, 2: MIN2})
    assert r.profile_overrides == {1: [*MIN1, "method.num_speculative_tokens=4"],
                                   2: [*MIN2, "method.num_speculative_tokens=2"]}
    assert r.backend_keys is None and r.backend_source is None and r.schedule_overrides is None
    note = next(n for n in r.notes if "differ in more than K" in n)
    assert "prompt_lookup_min=1" in note and "prompt_lookup_min=2" in note and "varies K alone" in note


def test_one_setting_chosen_at_every_load_is_served_with_its_schedule():
    """The same knobs everywhere, K alone varying: the schedule renders, and the sweep serves it with the knobs."""
    plain = recommend(load_profile("ngram-vllm-serve-cpu"), BEST)
    r = recommend(load_profile("ngram-vllm-serve-cpu"), BEST, settings={1: MIN1, 2: MIN1})
    assert r.backend_keys == plain.backend_keys is not None
    assert r.schedule_overrides == [*MIN1, *plain.schedule_overrides]
    assert load_profile("ngram-vllm-serve-cpu", r.schedule_overrides).profile.method.prompt_lookup_min == 1
    assert any("served with method.prompt_lookup_min=1" in n for n in r.notes)


def test_a_schedule_over_one_concurrency_is_the_chosen_series_and_not_served_again():
    """Over one load the schedule renders (a user may set it), but the sweep starts no server for it: it is the series
    the grid measured there (a one-concurrency sweep served it twice, 2026-12-06). Over several loads it is served,
    one K everywhere included: what runs is the schedule's own key, which the engine must take."""
    r = recommend(load_profile("ngram-vllm-serve-cpu"), {1: 3})
    assert r.backend_keys is not None and r.schedule_overrides is None
    assert any("one concurrency measured: the schedule is K=3" in n and "not served again" in n for n in r.notes)
    for best in ({1: 3, 2: 3}, {1: 3, 2: None}):
        assert recommend(load_profile("ngram-vllm-serve-cpu"), best).schedule_overrides is not None

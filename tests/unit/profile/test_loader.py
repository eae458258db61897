"""Profiles are validated before any download, and every refusal names file, field and allowed values."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cli.main import EXIT_PROFILE, main
from specops.profile import loader
from specops.profile.errors import ProfileError
from specops.profile.loader import (
    DuplicateKeyError,
    apply_overrides,
    check_comparable,
    list_profile_names,
    load_profile,
    overridden,
    read_document,
    strict_load,
)

ROOT = Path(__file__).resolve().parents[3]


def write(path: Path, data: dict | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


@pytest.fixture
def shipped(tmp_path) -> Path:
    """A copy of the shipped ngram-local profile and its fragment, to edit per test."""
    write(tmp_path / "_shared/embedded-cpu.yaml", (ROOT / "profiles/_shared/embedded-cpu.yaml").read_text())
    return write(tmp_path / "ngram-local.yaml", (ROOT / "profiles/ngram-local.yaml").read_text())


def edit(path: Path, **sections) -> Path:
    doc = yaml.safe_load(path.read_text())
    for key, value in sections.items():
        doc[key] = value
    return write(path, doc)


def test_shipped_profile_resolves_include_and_defaults():
    loaded = load_profile("ngram-local")
    p = loaded.profile
    assert (p.name, p.method.kind, p.backend.kind) == ("ngram-local", "ngram", "local")
    assert p.target.source == "embedded:smollm2-135m"  # from the _shared fragment
    assert p.serving.host == "127.0.0.1"
    assert loaded.resolved["benchmark"]["num_requests"] == 8


def test_overrides_are_typed_and_change_the_hash():
    a = load_profile("ngram-local")
    b = load_profile("ngram-local", ["benchmark.num_requests=32", "comparison.baseline=false"])
    assert b.profile.benchmark.num_requests == 32 and b.profile.comparison.baseline is False
    assert a.sha256 != b.sha256


def test_unknown_key_names_file_field_and_allowed(shipped):
    edit(shipped, method={"kind": "ngram", "num_speculative_token": 4})
    with pytest.raises(ProfileError) as info:
        load_profile(str(shipped))
    msg = str(info.value)
    assert str(shipped) in msg
    assert "method.num_speculative_token: unknown key 'num_speculative_token'" in msg
    assert "allowed: kind, num_speculative_tokens, prompt_lookup_max, prompt_lookup_min" in msg


def test_unknown_top_level_key(shipped):
    edit(shipped, benchmarks={"num_requests": 3})
    with pytest.raises(ProfileError, match=r"benchmarks: unknown key 'benchmarks'; allowed: backend, benchmark"):
        load_profile(str(shipped))


def test_unknown_method_lists_methods(shipped):
    edit(shipped, method={"kind": "lookahead"})
    with pytest.raises(ProfileError) as info:
        load_profile(str(shipped))
    assert str(shipped) in str(info.value)
    assert "method.kind: unknown method 'lookahead'; allowed: draft-target, eagle, eagle3, medusa, ngram, none" in str(info.value)


def test_unknown_backend_lists_backends(shipped):
    edit(shipped, backend={"kind": "sglang"})
    with pytest.raises(ProfileError, match=r"backend.kind: unknown backend 'sglang'; allowed: local, trtllm, trtllm-engine, trtllm-serve, vllm"):
        load_profile(str(shipped))


def test_unsupported_pair_names_the_supported_methods(shipped):
    edit(shipped, backend={"kind": "trtllm-engine", "image": "nvcr.io/nvidia/tritonserver:25.12-trtllm-python-py3"})
    with pytest.raises(ProfileError) as info:
        load_profile(str(shipped))
    msg = str(info.value)
    assert str(shipped) in msg
    assert ("method.kind: method 'ngram' is not supported by backend 'trtllm-engine'; allowed with "
            "'trtllm-engine': draft-target, eagle, medusa, none; backends that serve it: local, trtllm, "
            "trtllm-serve, vllm") in msg


def test_draft_required_and_refused(shipped):
    edit(shipped, draft={"source": "hf://a/b"})
    with pytest.raises(ProfileError, match=r"draft: method 'ngram' uses no draft model"):
        load_profile(str(shipped))


def test_bad_values_and_sources(shipped):
    cases = {
        "benchmark.num_requests=0": "benchmark.num_requests: Input should be greater than or equal to 1",
        "target.source=hf://nope": "target.source: malformed hub source",
        "target.source=s3://bucket/x": "target.source: unknown model source",
        "target.source=embedded:llama-70b": "unknown embedded model 'llama-70b'; allowed: smollm2-135m",
        "method.prompt_lookup_min=5": "prompt_lookup_min (5) must not exceed prompt_lookup_max (3)",
        "benchmark.prompts=/nonexistent/prompts.jsonl": "benchmark.prompts: file not found",
        "name=Bad Name": "name: String should match pattern",
    }
    for override, expected in cases.items():
        with pytest.raises(ProfileError) as info:
            load_profile(str(shipped), [override])
        assert expected in str(info.value), (override, str(info.value))


@pytest.mark.parametrize("override, expected", [
    # vLLM's own bounds (vllm/config/speculative.py SpeculativeConfig._validate_suffix_decoding, 0.32.0)
    ("method.max_tree_depth=0", "method.max_tree_depth: Input should be greater than or equal to 1"),
    ("method.max_cached_requests=-1", "method.max_cached_requests: Input should be greater than or equal to 0"),
    ("method.max_spec_factor=-0.5", "method.max_spec_factor: Input should be greater than or equal to 0"),
    ("method.min_token_prob=1.5", "method.min_token_prob: Input should be less than or equal to 1"),
    # backends without suffix decoding refuse it at load, through their support tables
    ("backend={kind: local}", "method.kind: method 'suffix' is not supported by backend 'local'"),
    ("backend={kind: trtllm-serve}", "method.kind: method 'suffix' is not supported by backend 'trtllm-serve'"),
])
def test_suffix_decoding_knobs_are_bounded_as_vllm_validates_them(override, expected):
    with pytest.raises(ProfileError) as info:
        load_profile("suffix-vllm-serve-cpu", [override])
    assert expected in str(info.value), str(info.value)
    method = load_profile("suffix-vllm-serve-cpu").profile.method
    assert method.cross_request_cache() == 0  # the shipped default: what a user sees, no cross-request cache


def test_all_problems_reported_at_once(shipped):
    edit(shipped, method={"kind": "ngram", "x": 1}, serving={"hots": "127.0.0.1"})
    with pytest.raises(ProfileError) as info:
        load_profile(str(shipped))
    assert len(info.value.problems) == 2


def test_include_cycle_detected(tmp_path):
    write(tmp_path / "a.yaml", {"include": "b.yaml", "name": "a"})
    write(tmp_path / "b.yaml", {"include": "a.yaml"})
    with pytest.raises(ProfileError, match=r"include cycle: a.yaml -> b.yaml -> a.yaml"):
        read_document(tmp_path / "a.yaml")


def test_missing_include_and_bad_yaml(tmp_path):
    write(tmp_path / "a.yaml", {"include": "gone.yaml"})
    with pytest.raises(ProfileError, match="included file not found"):
        read_document(tmp_path / "a.yaml")
    write(tmp_path / "b.yaml", "method: [unclosed")
    with pytest.raises(ProfileError, match="not valid YAML"):
        read_document(tmp_path / "b.yaml")


def test_include_is_overridden_by_including_file(tmp_path):
    write(tmp_path / "base.yaml", {"benchmark": {"num_requests": 5, "output_tokens": 7}})
    write(tmp_path / "top.yaml", {"include": ["base.yaml"], "benchmark": {"num_requests": 9}})
    assert read_document(tmp_path / "top.yaml")["benchmark"] == {"num_requests": 9, "output_tokens": 7}


def test_malformed_override():
    with pytest.raises(ProfileError, match="expected key=value"):
        apply_overrides({}, ["benchmark.num_requests"])


def test_unknown_profile_name_lists_known():
    with pytest.raises(ProfileError) as info:
        load_profile("no-such-profile")
    assert "known profiles: " in str(info.value) and "ngram-local" in str(info.value) and "eagle3-trtllm" in str(info.value)


@pytest.mark.parametrize("override,expected", [
    ("method.bogus=1", "method.bogus: unknown key 'bogus'"),
    ("method.kind=eagle9", "method.kind: unknown method 'eagle9'"),
    ("method={kind: medusa}", "draft: method 'medusa' needs a 'draft' section"),
])
def test_plan_cli_fails_before_any_download(override, expected, tmp_path):
    """`specops plan` refuses bad profiles with exit 2; no cache directory is even created."""
    cache = tmp_path / "cache"
    env = {**__import__("os").environ, "SPECOPS_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, "-m", "cli", "plan", "ngram-local", "--set", override],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "profiles/ngram-local.yaml" in proc.stderr and expected in proc.stderr
    assert not cache.exists()


@pytest.mark.parametrize(("profile", "overrides", "expected"), [
    ("ngram-local", ["benchmark.pairing=requests", "benchmark.tool=genai-perf"],  # the CPU profiles' tool is aiperf
     "benchmark.pairing: requests needs a tool that interleaves requests over this backend's API "
     "(kserve/vllm, triton/generate): aiperf; benchmark.tool is genai-perf"),
    ("ngram-local", ["benchmark.pairing=requests", "benchmark.tool=aiperf", "benchmark.concurrency=4"],
     "benchmark.pairing: requests needs benchmark.concurrency 1 (got 4)"),
    ("ngram-local", ["benchmark.pairing=requests", "benchmark.tool=aiperf", "benchmark.interleave=false"],
     "benchmark.pairing: requests needs benchmark.interleave true and comparison.baseline true"),
    ("ngram-vllm-serve-cpu", ["benchmark.pairing=requests", "benchmark.tool=genai-perf"],
     "(openai/completions, openai/chat): aiperf; benchmark.tool is genai-perf"),
    ("ngram-local", ["benchmark.pairing=blocks"], "benchmark.pairing"),
])
def test_request_pairing_is_refused_at_load_where_it_cannot_run(profile, overrides, expected):
    with pytest.raises(ProfileError) as info:
        load_profile(profile, overrides)
    assert expected in str(info.value)


def test_request_pairing_loads_where_it_can_run():
    loaded = load_profile("ngram-local", ["benchmark.pairing=requests", "benchmark.tool=aiperf"])
    assert loaded.profile.benchmark.pairing == "requests"
    assert load_profile("ngram-local").profile.benchmark.pairing == "auto"


NGRAM_PROFILES = ["ngram-local", "ngram-vllm", "ngram-vllm-cpu", "ngram-vllm-serve", "ngram-vllm-serve-cpu"]


@pytest.mark.parametrize("name", NGRAM_PROFILES)
def test_every_ngram_profile_states_its_lookup_window_and_they_match_alike(name):
    """Stated in the YAML itself (not left to an engine's default), and the same on every engine, so a comparison of
    engines (make bench-engines) compares engines, not n-gram windows."""
    method = yaml.safe_load((ROOT / "profiles" / f"{name}.yaml").read_text())["method"]
    assert {"prompt_lookup_min", "prompt_lookup_max", "num_speculative_tokens"} <= set(method)
    loaded = load_profile(name)
    m = loaded.profile.method
    assert (m.num_speculative_tokens, m.prompt_lookup_min, m.prompt_lookup_max) == (4, 2, 3)
    assert loaded.warnings == ()


@pytest.fixture
def fresh_warnings(monkeypatch):
    """Each warning is logged once per process: forget the earlier ones."""

    monkeypatch.setattr(loader, "_warned", set())


@pytest.mark.parametrize("name, release, file", [
    ("ngram-vllm-serve-cpu", "0.32.0", "vllm/config/speculative.py"),  # vLLM's own server on the CPU engine
    ("ngram-vllm-cpu", "0.32.0", "vllm/config/speculative.py"),  # Triton's vLLM backend on the CPU engine
    ("ngram-vllm", "0.27.1", "vllm/config/speculative.py"),  # the 26.08 Triton image
    ("ngram-vllm-serve", "0.32.0", "vllm/config/speculative.py"),  # vllm/vllm-openai:v0.32.0
])
def test_a_vllm_ngram_profile_without_prompt_lookup_min_warns_at_load_citing_vllms_rule(
        name, release, file, fresh_warnings, caplog):
    with caplog.at_level("WARNING", logger="specops.profile"):
        loaded = load_profile(name, ["method.prompt_lookup_min=null", "method.prompt_lookup_max=4"])
    assert loaded.profile.method.prompt_lookup_min is None  # valid: a warning, not a refusal
    [warning] = loaded.warnings
    assert warning.startswith("method.prompt_lookup_min: unset, so vLLM " + release)
    assert ("sets it to prompt_lookup_max, 4, and matches only 4-token n-grams "
            f"({file}, SpeculativeConfig.__post_init__, its n-gram branch)") in warning
    [record] = [r for r in caplog.records if r.name == "specops.profile"]
    assert record.levelname == "WARNING" and warning in record.getMessage() and name in record.getMessage()


def test_an_older_vllm_with_flat_keys_gets_its_own_rule(fresh_warnings):
    """vLLM <= 0.8.1 (flat ngram_prompt_lookup_* keys) defaults the minimum to 1, not to the maximum."""
    loaded = load_profile("ngram-vllm", ["backend.image=nvcr.io/nvidia/tritonserver:25.02-vllm-python-py3",
                                         "method.prompt_lookup_min=null"])
    assert loaded.profile.backend.release() == "0.7.0"
    [warning] = loaded.warnings
    assert "vLLM 0.7.0" in warning and "matches n-grams of 1 to 3 tokens" in warning
    assert "vllm/config.py, SpeculativeConfig.maybe_create_spec_config" in warning


def test_the_warning_is_logged_once_per_profile_and_never_for_other_backends(fresh_warnings, caplog):
    unset = ["method.prompt_lookup_min=null"]
    with caplog.at_level("WARNING", logger="specops.profile"):
        for k in (1, 2, 4):  # as a sweep loads its profile, once per cell
            assert load_profile("ngram-vllm-serve-cpu", [*unset, f"method.num_speculative_tokens={k}"]).warnings
        local = load_profile("ngram-local", unset)  # the embedded runtime's default (2) is its own
    assert len([r for r in caplog.records if r.name == "specops.profile"]) == 1
    assert local.warnings == ()


def test_duplicate_top_level_key_names_key_and_lines():
    with pytest.raises(DuplicateKeyError) as err:
        strict_load("name: a\nmethod: {kind: ngram}\nname: b\n")
    assert (err.value.key, err.value.first_line, err.value.line) == ("name", 1, 3)


def test_duplicate_nested_key_is_refused():
    with pytest.raises(DuplicateKeyError, match="'num_requests' at line 4"):
        strict_load("benchmark:\n  rounds: 2\n  num_requests: 3\n  num_requests: 4\n")


def test_duplicate_in_a_flow_mapping_inside_a_list():
    with pytest.raises(DuplicateKeyError):
        strict_load("items:\n  - {a: 1, a: 2}\n")


def test_equal_keys_in_different_mappings_are_fine():
    assert strict_load("a: {x: 1}\nb: {x: 1, y: 2}\n") == {"a": {"x": 1}, "b": {"x": 1, "y": 2}}


# Nine levels of nine aliases each: 9**9 (387 million) strings once expanded (issue 51: `specops plan` grew past 3.4 GB
# in 80 s on a smaller one inside backend.engine_args).
BOMB = "{" + ", ".join(["a0: &a0 [x, x, x, x, x, x, x, x, x]"] + [
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]) + "}"


def test_no_alias_is_expanded_in_a_profile_file_nor_in_a_merge_key(tmp_path):
    write(tmp_path / "bomb.yaml", f"name: bomb\nbackend:\n  engine_args:\n    bomb: {BOMB}\n")
    with pytest.raises(ProfileError) as err:
        read_document(tmp_path / "bomb.yaml")
    assert str(tmp_path / "bomb.yaml") in str(err.value) and "an alias (*a0)" in str(err.value)
    assert "line 4" in str(err.value)
    with pytest.raises(yaml.YAMLError, match=r"alias \(\*b\)"):
        strict_load("base: &b {x: 1}\nb:\n  <<: *b\n  y: 2\n")


@pytest.mark.parametrize("key", ["backend.engine_args.bomb", "name"])
def test_no_alias_is_expanded_in_an_override_as_set_or_as_a_deployment_passes_it(key):
    """`--set` and a deployment's overrides are both overrides of load_profile: refused at the first alias, at once."""
    import time

    start = time.monotonic()
    with pytest.raises(ProfileError) as err:
        load_profile("ngram-vllm-serve-cpu", [f"{key}={BOMB}"])
    assert time.monotonic() - start < 5 and f"{key}: value" in str(err.value) and "an alias (*a0)" in str(err.value)


def test_it_is_still_a_safe_loader():
    import yaml

    with pytest.raises(yaml.YAMLError):
        strict_load("!!python/object/apply:os.system ['true']\n")


def loaded(*names: str, overrides: tuple[str, ...] = ()):
    return [load_profile(n, list(overrides)) for n in names]


def test_different_profiles_of_one_target_compare():
    check_comparable(loaded("ngram-local", "eagle3-local", "medusa-local"))


@pytest.mark.parametrize("names, twice", [
    (("ngram-local", "ngram-local"), "ngram-local.yaml"), (("ngram-local", "profiles/ngram-local.yaml"), "ngram-local.yaml"),
    (("eagle3-local", "ngram-local", "eagle3-local"), "eagle3-local.yaml")])
def test_one_profile_twice_is_refused_by_name_or_path(names, twice):
    with pytest.raises(ProfileError, match="these resolve to the same profile: ") as err:
        check_comparable(loaded(*names))
    message = str(err.value)
    assert message.count(twice) == 2 and "`specops run` it twice and `specops compare` the runs" in message


def test_one_profile_with_another_setting_is_two_profiles():
    two = [load_profile("ngram-local"), load_profile("ngram-local", ["method.num_speculative_tokens=2"])]
    check_comparable(two)


def test_fewer_than_two_and_other_targets_are_refused():
    with pytest.raises(ProfileError, match="two profiles or more"):
        check_comparable(loaded("ngram-local"))
    other = load_profile("ngram-local", ["target.source=hf://Qwen/Qwen3-0.6B"])
    with pytest.raises(ProfileError, match="of one target model side by side; these differ"):
        check_comparable([*loaded("eagle3-local"), other])


def test_the_cli_refuses_before_prefect_starts(capsys):
    assert main(["compare-profiles", "ngram-local", "ngram-local"]) == EXIT_PROFILE
    err = capsys.readouterr().err
    assert err.startswith("specops: invalid profile\n  compare-profiles: profiles: compare puts different profiles")


@pytest.mark.parametrize("name", [n for n in list_profile_names() if load_profile(n).profile.method.draft_length()])
def test_overrides_on_a_loaded_profile_match_a_load_with_them_and_read_no_file(name, monkeypatch):
    # A sweep derives each cell's profile from the one it loaded (issue 37: nothing re-reads it from disk).
    loaded = load_profile(name, ["benchmark.num_requests=4"])
    more = ["method.num_speculative_tokens=2", "benchmark.concurrency=3"]
    fresh = load_profile(name, ["benchmark.num_requests=4", *more])
    monkeypatch.setattr(loader, "read_document", lambda *a, **k: pytest.fail("the profile file was read again"))
    derived = overridden(loaded, more)
    assert derived.resolved == fresh.resolved and derived.overrides == fresh.overrides
    assert derived.profile.method.draft_length() == 2 and derived.profile.benchmark.concurrency == 3
    with pytest.raises(ProfileError, match="benchmark.concurrency"):
        overridden(loaded, ["benchmark.concurrency=0"])

"""Profile YAML refuses a key given twice in one mapping, at any depth."""
from __future__ import annotations

import pytest

from specops.profile import strict_yaml


def test_duplicate_top_level_key_names_key_and_lines():
    with pytest.raises(strict_yaml.DuplicateKeyError) as err:
        strict_yaml.load("name: a\nmethod: {kind: ngram}\nname: b\n")
    assert (err.value.key, err.value.first_line, err.value.line) == ("name", 1, 3)


def test_duplicate_nested_key_is_refused():
    with pytest.raises(strict_yaml.DuplicateKeyError, match="'num_requests' at line 4"):
        strict_yaml.load("benchmark:\n  rounds: 2\n  num_requests: 3\n  num_requests: 4\n")


def test_duplicate_in_a_flow_mapping_inside_a_list():
    with pytest.raises(strict_yaml.DuplicateKeyError):
        strict_yaml.load("items:\n  - {a: 1, a: 2}\n")


def test_equal_keys_in_different_mappings_and_merge_keys_are_fine():
    doc = strict_yaml.load("base: &b {x: 1}\na: {x: 1}\nb:\n  <<: *b\n  y: 2\n")
    assert doc == {"base": {"x": 1}, "a": {"x": 1}, "b": {"x": 1, "y": 2}}


def test_it_is_still_a_safe_loader():
    import yaml

    with pytest.raises(yaml.YAMLError):
        strict_yaml.load("!!python/object/apply:os.system ['true']\n")

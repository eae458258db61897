"""YAML for profiles: safe_load that refuses a key given twice in one mapping.

PyYAML keeps the last of two equal keys without a word, so a profile that sets
`num_requests` twice silently runs with whichever came second.
"""
from __future__ import annotations

from typing import Any

import yaml


class DuplicateKeyError(yaml.YAMLError):
    def __init__(self, key: Any, line: int, first_line: int):
        self.key, self.line, self.first_line = key, line, first_line
        super().__init__(f"duplicate key {key!r} at line {line} (first given at line {first_line})")


class StrictLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<:` merges on purpose
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise DuplicateKeyError(key, line, seen[key])
            except TypeError:  # an unhashable key: SafeLoader refuses it with its own message
                break
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load(text: str) -> Any:
    return yaml.load(text, Loader=StrictLoader)  # a SafeLoader: builds plain data only

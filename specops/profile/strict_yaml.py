"""The YAML specops reads from people (profile files, includes, `--set` values, a deployment's overrides, a run's
own profile.yaml): plain data only (SafeLoader), no key given twice, no alias expanded."""
from __future__ import annotations

from typing import Any

import yaml


class DuplicateKeyError(yaml.YAMLError):
    """A key given twice in one mapping: PyYAML would keep the last without a word."""

    def __init__(self, key: Any, line: int, first_line: int):
        self.key, self.line, self.first_line = key, line, first_line
        super().__init__(f"duplicate key {key!r} at line {line} (first given at line {first_line})")


class StrictLoader(yaml.SafeLoader):
    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """No alias is expanded: a few levels of aliases to aliases (a YAML bomb in a free-form field such as
        backend.engine_args) grew `specops plan` past 3.4 GB in 80 s. Profiles need none (`include:` shares)."""
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"an alias (*{event.anchor}) repeats an anchored value: specops expands none (aliases "
                "of aliases grow without bound); write the value out, or share it with `include:`", event.start_mark)
        return super().compose_node(parent, index)

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


def strict_load(text: str) -> Any:
    """safe_load (plain data only) that refuses a key given twice in one mapping, and any alias."""
    return yaml.load(text, Loader=StrictLoader)

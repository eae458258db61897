"""Each override (`key=value`) a deployment's run is created with, checked by the server against the profile schema
(specops/fleet/forms.py puts this into every deployment's parameter schema), each refusal in people's words.

The server's refusal is a JSON schema validator's message, which quotes the rejected string and then one of a few
fixed phrasings; `enum` lists its allowed values, so every rule here ends in a one-value enum that says what would
be right: `'benchmark.num_requests=-3' is not one of ['benchmark.num_requests: a whole number from 1 to 100000']`,
`'benchmark.num_reqests=4' is not one of ['no profile key; the nearest: benchmark.num_requests (a whole number from
1 to 100000)']`. Before, a range passed the form and failed on the worker 30 s later, and a refused key read
`... is not valid under any of the given schemas` or a raw regular expression.

The nearest key of an unknown one is a key one edit (a letter left out, added, changed or two swapped) within one of
its words away, the same words with the underscores missed, or the same field under another (or no) section.
"""
from __future__ import annotations

import re
from functools import cache
from typing import Any

from specops.fleet.value_patterns import ANY, Shape, resolve, shape_of
from specops.profile.schema import Profile

# A YAML alias or anchor in a value: the loader refuses it (specops/profile/strict_yaml.py); said at creation
ALIAS = r"=(?:.*[\[{,:\s])?[*&][^\s,\]}]"
AFFIX, SLACK = 4, 2  # a near key: the same first or last AFFIX letters, at most SLACK letters longer or shorter


@cache  # the profile schema is fixed in a process; `make up` narrows ~56 deployments' forms
def override_shapes() -> dict[str, tuple[str, Shape]]:
    """key regex -> (the key as a person writes it, its value's shape), for every dotted key of the profile schema
    (every variant of a union: a method's or a backend's kind decides which apply, and the loader says so)."""
    schema = Profile.model_json_schema()
    out: dict[str, tuple[str, Shape]] = {}
    for name, child in schema["properties"].items():
        _leaves(child, schema["$defs"], name, out)
    return out


def _leaves(node: dict, defs: dict, key: str, out: dict[str, tuple[str, Shape]]) -> None:
    node = resolve(node, defs)
    variants = [resolve(o, defs) for o in node.get("oneOf") or node.get("anyOf") or []]
    sections = [v for v in variants or [node] if v.get("type") == "object" and "properties" in v]
    if sections:
        for section in sections:
            for name, child in section["properties"].items():
                _leaves(child, defs, f"{key}.{name}", out)
        return
    if node.get("type") == "object" or isinstance(node.get("additionalProperties"), dict):
        out[re.escape(key) + r"(?:\.[^=.]+)+"] = (f"{key}.<key>", shape_of({}, defs))  # a free mapping (engine args)
    shape, seen = shape_of(node, defs), out.get(re.escape(key))
    out[re.escape(key)] = (key, shape if seen is None else seen[1].merged(shape))  # method.kind in each method


def _one_edit(word: str) -> str:
    """A regular expression of the words at most one edit from `word` (a letter left out, changed, added, or two
    swapped), factored on the letters they share: the edit is after the first letter, or at it."""
    if not word:
        return "."
    head, rest = re.escape(word[0]), word[1:]
    swapped = [re.escape(rest[0] + word[0] + rest[1:])] if rest else []
    return f"(?:{'|'.join([f'{head}{_one_edit(rest)}', f'(?:.?|.{head}){re.escape(rest)}', *swapped])})"


def near(key: str) -> str:
    """A regular expression of the keys (with `=`) near `key`: in its section, a field that starts or ends with the
    same AFFIX letters and is within SLACK letters as long (a letter left out, added, changed or two swapped in the
    rest; a field of AFFIX letters or fewer: one edit from it), or its field under another section or none."""
    section, _, field = key.rpartition(".")
    low, high = max(0, len(field) - AFFIX - SLACK), len(field) - AFFIX + SLACK
    head, tail = re.escape(field[:AFFIX]), re.escape(field[-AFFIX:])
    similar = f"{head}[^=]{{{low},{high}}}|[^=]{{{low},{high}}}{tail}" if len(field) > AFFIX else _one_edit(field)
    in_section = f"{re.escape(section)}\\.(?:{similar})|" if section else ""
    return f"^(?:{in_section}(?:[^=]*\\.)?{re.escape(field)})="


def _refusal(why: str) -> dict[str, Any]:
    return {"enum": [why]}


def _value_rules(shapes: dict[str, tuple[str, Shape]]) -> list[dict[str, Any]]:
    """Per key whose values the schema bounds: the key with any other value is refused, saying what it takes."""
    return [{"if": {"pattern": f"^{key}=(?!{shape.pattern}$)"}, "then": _refusal(f"{shown}: {shape.words}")}
            for key, (shown, shape) in sorted(shapes.items()) if shape.pattern != ANY]


def _unknown_key_rules(shapes: dict[str, tuple[str, Shape]]) -> dict[str, Any]:
    """Rules for a key of none of the sections' fields: the nearest keys, else the section's keys, else the
    sections."""
    nearest = [{"if": {"pattern": near(shown)}, "then": _refusal(f"no profile key; the nearest: {shown}")}
               for shown, _ in shapes.values() if not shown.endswith("<key>")]
    by_section: dict[str, list[str]] = {}
    for shown, _ in shapes.values():
        section, _, field = shown.partition(".")
        by_section.setdefault(section, []).append(field or section)
    sections = [{"if": {"pattern": f"^{re.escape(section)}\\."},
                 "then": _refusal(f"no key of {section}; its keys: {', '.join(sorted(fields))}")}
                for section, fields in by_section.items() if fields != [section]]
    anywhere = _refusal(f"no profile key; a key is one of the sections {', '.join(by_section)} and its field, e.g. "
                        "benchmark.num_requests")
    known = f"^(?:{'|'.join(sorted(shapes))})="
    return {"if": {"not": {"pattern": known}}, "then": {"allOf": [*nearest, *sections, anywhere]}}


@cache
def override_item_schema() -> dict[str, Any]:
    """One override's schema: `key=value`, a key of the profile schema, a value of its type and bounds, no YAML
    alias; every refusal saying what would be right."""
    shapes = override_shapes()
    not_a_pair = {"if": {"not": {"pattern": "^[^=\\s]+="}},
                  "then": _refusal("key=value: a profile key, `=`, then a YAML value, e.g. benchmark.num_requests=8")}
    alias = {"if": {"pattern": ALIAS}, "then": _refusal("a value without a YAML alias or anchor (*name, &name): "
                                                        "specops expands none; write the value out")}
    return {"type": "string", "allOf": [not_a_pair, _unknown_key_rules(shapes), alias, *_value_rules(shapes)]}

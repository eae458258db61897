"""A deployment's form as its pool can serve it: the profile choices narrowed to the profiles that pool's workers
run, and each override checked, where the server checks parameters, against the profile schema's keys and value
types.

Prefect builds one parameter schema per flow (prefect/cli/deploy/_core.py: `parameter_schema(flow)`, whatever
prefect.yaml says), so every deployment of `specdec` offered all profiles and any string as an override: a GPU
profile picked on the CPU pool's deployment ran, and `num_requests 4` failed 25 s later on the worker. The server
checks a run's parameters against its deployment's stored schema when the run is created
(enforce_parameter_schema; prefect/server/api/deployments.py answers 409), and a deployment's schema can be
updated (DeploymentUpdate.parameter_openapi_schema): `specops deployments --narrow-forms` writes these after
`prefect deploy`. Prefect-free: schema in, schema out.
"""
from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any

from specops.profile.schema import Profile

INTEGER = r"-?[0-9]+"
NUMBER = r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
BOOLEAN = r"(?:true|false|True|False|TRUE|FALSE|yes|no|on|off)"  # what YAML 1.1 (the loader) reads as one
NULL = r"(?:null|~|)"
ANY = r".*"


def _resolve(node: dict, defs: dict) -> dict:
    while "$ref" in node:
        node = {**defs[node["$ref"].rsplit("/", 1)[1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _value_pattern(node: dict, defs: dict) -> str:
    """What a YAML value of this schema node looks like; ANY where the loader's own validation decides."""
    node = _resolve(node, defs)
    if "enum" in node:
        return "(?:" + "|".join(re.escape(str(v)) for v in node["enum"]) + ")"
    if "const" in node:
        return re.escape(str(node["const"]))
    options = node.get("anyOf") or node.get("oneOf")
    if options:
        parts = [_value_pattern(o, defs) for o in options]
        return ANY if ANY in parts else "(?:" + "|".join(parts) + ")"
    return {"integer": INTEGER, "number": NUMBER, "boolean": BOOLEAN, "null": NULL}.get(node.get("type"), ANY)


def _leaves(node: dict, defs: dict, prefix: str, out: dict[str, str]) -> None:
    """key regex -> value regex for every field under `node` (every variant of a union: a method's or backend's
    kind decides which apply, and the loader says so)."""
    node = _resolve(node, defs)
    variants = [_resolve(o, defs) for o in node.get("oneOf") or node.get("anyOf") or []]
    sections = [v for v in variants or [node] if v.get("type") == "object" and "properties" in v]
    if sections:
        for section in sections:
            for name, child in section["properties"].items():
                _leaves(child, defs, rf"{prefix}\.{re.escape(name)}", out)
        return
    if node.get("type") == "object" or isinstance(node.get("additionalProperties"), dict):
        out[prefix + r"(?:\.[^=.]+)+"] = ANY  # a free mapping (engine args): its keys are the engine's
    value, seen = _value_pattern(node, defs), out.get(prefix)
    # one key in several variants (method.kind in each method): a value of any of them
    out[prefix] = value if seen in (None, value) else ANY if ANY in (seen, value) else f"(?:{seen}|{value})"


@cache  # the profile schema is fixed in a process; `make up` narrows ~56 deployments' forms (40 ms each otherwise)
def override_patterns() -> dict[str, str]:
    """Every dotted key of the profile schema (key regex) and the shape of its value (value regex); read only."""
    schema = Profile.model_json_schema()
    out: dict[str, str] = {}
    for name, child in schema["properties"].items():
        _leaves(child, schema["$defs"], re.escape(name), out)
    return out


def override_item_schema() -> dict[str, Any]:
    """An override's schema: `key=value` with a key of the profile schema, and per key a value of its type (the
    server's message then names the key and the shape its value takes)."""
    patterns = override_patterns()
    sections: dict[str, list[str]] = {}
    for key in sorted(patterns):
        sections.setdefault(key.split("\\.", 1)[0], []).append(key)
    # anyOf, a pattern per top-level section: the server's message for a key of none stays one line
    known = [{"pattern": f"^(?:{'|'.join(keys)})="} for keys in sections.values()]
    return {"type": "string", "anyOf": known,
            "allOf": [{"if": {"pattern": f"^{key}="}, "then": {"pattern": f"^{key}={value}$"}}
                      for key, value in sorted(patterns.items()) if value != ANY]}


def narrowed(schema: dict[str, Any], choices: list[str], shipped: list[str]) -> dict[str, Any]:
    """The flow's parameter schema for a deployment on a pool whose workers run `choices`: its profile (or
    profiles) one of them, each override a key of the profile schema with a value of its type. A regression
    suite's entries keep every shipped profile (a GPU one runs through its own deployment)."""
    out = copy.deepcopy(schema)
    item = override_item_schema()
    for props, names in [(out.get("properties", {}), choices),
                         *[(d.get("properties", {}), shipped) for d in out.get("definitions", {}).values()]]:
        if "profile" in props:
            props["profile"]["enum"] = list(names)
        if "profiles" in props:
            props["profiles"].setdefault("items", {})["enum"] = list(names)
        if "overrides" in props:
            props["overrides"]["items"] = {**props["overrides"].get("items", {}), **item}
    return out

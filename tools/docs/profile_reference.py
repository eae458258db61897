"""The profile reference: every field of the pydantic schema (specops/profile/schema.py) with its type, bounds,
default and description, read from the JSON schema pydantic derives from the models (what `specops schema` prints),
section by section as a profile's YAML nests them."""
from __future__ import annotations

from dataclasses import dataclass, field

from tools.docs.text import cell, code, generated_note, table

BOUNDS = (("minimum", "min"), ("exclusiveMinimum", "above"), ("maximum", "max"), ("exclusiveMaximum", "below"),
          ("minLength", "min length"), ("maxLength", "max length"), ("minItems", "min items"),
          ("maxItems", "max items"))


def _ref(schema: dict) -> str | None:
    return schema["$ref"].rsplit("/", 1)[-1] if "$ref" in schema else None


def _members(prop: dict) -> list[dict]:
    """The alternatives of a property, `null` left out (it shows as `| null` in the type)."""
    alts = prop.get("anyOf") or [prop]
    return [a for a in alts if a.get("type") != "null"]


@dataclass
class Walk:
    """The sections in the order a reader meets them: (anchor, heading, description, rows)."""
    defs: dict
    sections: list[tuple[str, str, str, list[list[object]]]] = field(default_factory=list)
    anchors: dict[str, str] = field(default_factory=dict)  # $def name -> the anchor of its first section
    pending: list[tuple[str, str, str]] = field(default_factory=list)  # (path, $def name, heading)

    def link(self, path: str, name: str, heading: str | None = None) -> str:
        """A link to the section of model `name`, queued under `path` when it is met first."""
        if name not in self.anchors:
            self.anchors[name] = path.replace(".", "-").replace("[]", "").replace(" ", "-")
            self.pending.append((path, name, heading or f"`{path}`"))
        return f"[{name}](#{self.anchors[name]})"

    def type_of(self, path: str, prop: dict) -> str:
        if "discriminator" in prop:
            kinds = sorted(prop["discriminator"]["mapping"])
            for kind in kinds:
                target = prop["discriminator"]["mapping"][kind].rsplit("/", 1)[-1]
                self.link(f"{path} kind {kind}", target, f"`{path}` with `kind: {kind}`")
            return "one of the kinds: " + ", ".join(f"[{k}](#{self.anchors[self._target(prop, k)]})" for k in kinds)
        types = [self._one(path, m) for m in _members(prop)]
        nullable = len(prop.get("anyOf", [])) > len(_members(prop))
        return " or ".join(types) + (" or null" if nullable else "")

    def _target(self, prop: dict, kind: str) -> str:
        return prop["discriminator"]["mapping"][kind].rsplit("/", 1)[-1]

    def _one(self, path: str, schema: dict) -> str:
        if name := _ref(schema):
            return self.link(path, name)
        if "const" in schema:
            return code(schema["const"])
        if "enum" in schema:
            return "one of " + ", ".join(code(v) for v in schema["enum"])
        kind = schema.get("type", "any")
        if kind == "array":
            return "list of " + self._one(f"{path}[]", schema.get("items", {}))
        if kind == "object":
            values = schema.get("additionalProperties")
            return "mapping" + (f" of name to {self._one(f'{path}[]', values)}" if isinstance(values, dict) else "")
        return kind + (f" (pattern {code(schema['pattern'])})" if "pattern" in schema else "")


def bounds(prop: dict) -> str:
    found = [f"{word} {member[key]}" for member in _members(prop) for key, word in BOUNDS if key in member]
    return ", ".join(found) or "-"


def default(prop: dict, required: bool) -> str:
    if required:
        return "required"
    if "default" not in prop:
        return "empty"  # a default_factory: an empty list or mapping
    value = prop["default"]
    if isinstance(value, dict) and _ref(prop) or (isinstance(value, dict) and value and prop.get("anyOf")):
        return "its fields' defaults"
    return code("null" if value is None else value)


def describe(walk: Walk, path: str, name: str) -> list[list[object]]:
    schema = walk.defs[name] if name else walk.defs["__root__"]
    required = set(schema.get("required", []))
    rows = []
    for key, prop in schema.get("properties", {}).items():
        where = f"{path}.{key}" if path else key
        kind = walk.type_of(where, prop)
        about = prop.get("description") or next((walk.defs[r].get("description", "") for r in
                                                  filter(None, map(_ref, _members(prop)))), "")
        rows.append([f"`{key}`", kind, bounds(prop), default(prop, key in required), about or "-"])
    return rows


def sections(schema: dict) -> list[tuple[str, str, str, list[list[object]]]]:
    walk = Walk({**schema.get("$defs", {}), "__root__": schema})
    walk.sections.append(("profile", "The profile", schema.get("description", ""), describe(walk, "", "")))
    while walk.pending:
        path, name, heading = walk.pending.pop(0)
        prefix = path.split(" kind ")[0]
        walk.sections.append((walk.anchors[name], heading, walk.defs[name].get("description", ""),
                              describe(walk, prefix, name)))
    return walk.sections


def page(schema: dict) -> str:
    lines = ["# Profile fields", "", generated_note("the pydantic models of `specops/profile/schema.py` and the "
                                                     "backend and method configs they take in (their JSON schema, "
                                                     "what `specops schema` prints)"),
             "A profile is YAML; every model forbids unknown keys. `--set key=value` overrides any field below "
             "(the value is parsed as YAML). Bounds: min and max are inclusive, above and below exclusive.", ""]
    for anchor, heading, about, rows in sections(schema):
        lines += [f"## {heading} {{#{anchor}}}", ""] + ([cell(about), ""] if about else [])
        lines += table(["field", "type", "bounds", "default", "description"], rows) + [""]
    return "\n".join(lines)

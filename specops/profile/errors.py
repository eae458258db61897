"""Turn pydantic validation errors into messages naming the file, the field and what is allowed."""
from __future__ import annotations

import typing
from pathlib import Path

from pydantic import BaseModel, ValidationError


class ProfileError(ValueError):
    """A profile is invalid. `problems` holds one (field, message) per problem."""

    def __init__(self, origin: str, problems: list[tuple[str, str]]):
        self.origin = origin
        self.problems = problems
        lines = [f"{origin}: {field}: {message}" if field else f"{origin}: {message}" for field, message in problems]
        super().__init__("invalid profile\n  " + "\n  ".join(lines))

    def __reduce__(self):  # pickled (a Prefect state's data) and rebuilt from its fields, not from the message
        return type(self), (self.origin, self.problems)


def _models_in(annotation) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _kind(model: type[BaseModel]) -> object:
    field = model.model_fields.get("kind")
    return field.default if field is not None else None


def _walk(root: type[BaseModel], loc: tuple) -> tuple[str, type[BaseModel] | None]:
    """Follow loc through nested models -> (dotted field path without union tags, model reached)."""
    model: type[BaseModel] | None = root
    union: list[type[BaseModel]] = []
    path: list[str] = []
    for part in loc:
        if model is None and union:  # pydantic puts the union tag (e.g. 'ngram') into loc
            model = next((m for m in union if _kind(m) == part), None)
            union = []
            continue
        if model is not None and part not in model.model_fields and _kind(model) == part:
            continue  # a one-member tagged union still puts its tag into loc
        path.append(str(part))
        field = model.model_fields.get(str(part)) if model is not None else None
        candidates = _models_in(field.annotation) if field is not None else []
        model, union = (candidates[0], []) if len(candidates) == 1 else (None, candidates)
    return ".".join(path), model


def _allowed_keys(root: type[BaseModel], loc: tuple) -> tuple[str, list[str]]:
    parent_path, model = _walk(root, loc[:-1])
    field = f"{parent_path}.{loc[-1]}" if parent_path else str(loc[-1])
    return field, sorted(model.model_fields) if model is not None else []


def _field_of(loc: tuple, root: type[BaseModel]) -> str:
    return _walk(root, loc)[0]


# Number fields are strict (specops.fields): say what was given instead, since YAML's `true`
# and a quoted "8" both look like numbers to whoever wrote them.
_NUMBER_TYPES = {"int_type": "an integer", "float_type": "a number"}


def _not_a_number(expected: str, value: object) -> str:
    if isinstance(value, bool):
        return f"expected {expected}, got the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"expected {expected}, got the string {value!r} (write the number without quotes)"
    return f"expected {expected}, got {type(value).__name__} {value!r}"


def explain(err: ValidationError, origin: str | Path, root: type[BaseModel]) -> ProfileError:
    problems: list[tuple[str, str]] = []
    for e in err.errors():
        loc, kind = e["loc"], e["type"]
        if kind == "extra_forbidden":
            field, allowed = _allowed_keys(root, loc)
            problems.append((field, f"unknown key {str(loc[-1])!r}; allowed: {', '.join(allowed)}"))
        elif kind == "union_tag_invalid":
            ctx = e["ctx"]
            what = "method" if loc and loc[0] == "method" else "backend" if loc and loc[0] == "backend" else "kind"
            allowed = ctx["expected_tags"].replace("'", "")
            problems.append((_field_of(loc, root) + ".kind", f"unknown {what} {ctx['tag']!r}; allowed: {allowed}"))
        elif kind == "union_tag_not_found":
            problems.append((_field_of(loc, root) + ".kind", "missing 'kind'"))
        elif kind == "missing":
            problems.append((_field_of(loc, root), "required field is missing"))
        elif kind in _NUMBER_TYPES:
            problems.append((_field_of(loc, root), _not_a_number(_NUMBER_TYPES[kind], e["input"])))
        else:
            cause = (e.get("ctx") or {}).get("error")
            field = getattr(cause, "field", None) or _field_of(loc, root)
            message = str(cause) if cause is not None else e["msg"]
            problems.append((field, message))
    return ProfileError(str(origin), problems)

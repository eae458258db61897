"""No number field of the profile takes a boolean, and no timeout is infinite or absurd.

Walks every model the profile schema reaches, so a field added later with a plain `int` or
`float` (which pydantic's lax mode fills from YAML's `true`) fails here.
"""
from __future__ import annotations

import math
import types
import typing
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from specops.fields import MAX_TIMEOUT_S
from specops.profile.schema import Profile


def _models(annotation: Any, seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation not in seen:
            seen.add(annotation)
            for f in annotation.model_fields.values():
                _models(f.annotation, seen)
        return seen
    for arg in typing.get_args(annotation):
        _models(arg, seen)
    return seen


def _number_sample(annotation: Any, number: Any) -> Any:
    """A value of `annotation`'s shape with `number` where it holds an int or a float; None if none."""
    if annotation in (int, float):
        return number
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _number_sample(args[0], number)
    if origin is list:
        inner = _number_sample(args[0], number)
        return None if inner is None else [inner]
    if origin in (typing.Union, types.UnionType):
        return next((s for a in args if (s := _number_sample(a, number)) is not None), None)
    return None


NUMBER_FIELDS = sorted(
    ((model.__name__, name, f) for model in _models(Profile, set()) for name, f in model.model_fields.items()
     if _number_sample(f.annotation, 1) is not None),
    key=lambda row: row[:2])


def _adapter(f) -> TypeAdapter:
    return TypeAdapter(Annotated[(f.annotation, *f.metadata)] if f.metadata else f.annotation)


def test_the_walk_finds_the_number_fields():
    names = {f"{model}.{name}" for model, name, _ in NUMBER_FIELDS}
    assert {"Benchmark.num_requests", "Serving.ready_timeout_s", "TrainSpec.lr", "NgramMethod.prompt_lookup_min",
            "TrtllmEngineBackendConfig.eagle_choices", "LocalBackendConfig.threads"} <= names
    assert len(names) > 40


@pytest.mark.parametrize(("model", "name", "f"), NUMBER_FIELDS, ids=[f"{m}.{n}" for m, n, _ in NUMBER_FIELDS])
def test_number_fields_refuse_booleans(model, name, f):
    for flag in (True, False):
        with pytest.raises(ValidationError):
            _adapter(f).validate_python(_number_sample(f.annotation, flag))


TIMEOUTS = [row for row in NUMBER_FIELDS if row[1].endswith("timeout_s") and "float" in str(row[2].annotation)]


@pytest.mark.parametrize(("model", "name", "f"), TIMEOUTS, ids=[f"{m}.{n}" for m, n, _ in TIMEOUTS])
def test_timeouts_are_finite_and_at_most_a_day(model, name, f):
    adapter = _adapter(f)
    for bad in (math.inf, math.nan, MAX_TIMEOUT_S + 1, 0):
        with pytest.raises(ValidationError):
            adapter.validate_python(bad)
    assert adapter.validate_python(MAX_TIMEOUT_S) == MAX_TIMEOUT_S


def test_timeouts_found():
    assert {n for _, n, _ in TIMEOUTS} >= {"ready_timeout_s", "stop_timeout_s", "request_timeout_s", "timeout_s",
                                           "build_timeout_s"}

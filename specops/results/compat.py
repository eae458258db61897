"""Reading a stored RunResult whatever specops wrote it: the schema-version policy, in code.

The policy (docs/operations/results-database.md):

- `SCHEMA_VERSION` (results/model.py) goes up with every change of the RunResult's fields.
- A record of this version or an older one loads as it is: fields added since have defaults.
- A record of a newer version is read with what this version understands: fields it does not
  know are dropped (and named), the rest validated as usual. A newer specops may add fields;
  removing or retyping one that older readers need is a breaking change, and such a record
  (or any record that does not load) is skipped with one warning naming it: history, compare,
  trends and the regression flow go on with the rest, never stop on one row.

Readers of many records (history, trends, regression) skip what does not load; a reader of one
record the user named (compare) says why it cannot show it.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from specops.results.model import SCHEMA_VERSION, RunResult

_MAX_PASSES = 8  # extra fields are reported all at once; a few passes cover fields inside dropped ones


@dataclass(frozen=True)
class Loaded:
    """A record read: the RunResult (None when it cannot be read), and what was left out or why not."""

    result: RunResult | None
    dropped: tuple[str, ...] = ()  # dotted paths of fields a newer specops wrote and this one ignores
    problem: str | None = None


@dataclass
class ReadNotes:
    """What a reader of many records tells its user once: rows shown in part, rows skipped."""

    partial: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def add(self, loaded: Loaded, data: Any) -> None:
        who = describe(data)
        if loaded.result is None:
            self.skipped.append(f"{who}: {loaded.problem}")
        elif loaded.dropped:
            self.partial.append(f"{who}: shown without {', '.join(loaded.dropped)}")

    def lines(self) -> list[str]:
        out = []
        if self.partial:
            out.append(f"{len(self.partial)} run(s) written by a newer specops are shown with the fields this "
                       "version knows: " + "; ".join(self.partial))
        if self.skipped:
            out.append(f"{len(self.skipped)} run(s) skipped, they do not load as this specops' RunResult "
                       f"(schema {SCHEMA_VERSION}; upgrade specops to read them): " + "; ".join(self.skipped))
        return out


def describe(data: Any) -> str:
    if not isinstance(data, dict):
        return "a stored run that is not a JSON object"
    return f"run {data.get('run_id', '?')} ({str(data.get('uid', '?'))[:12]}, record schema {version_of(data)})"


def version_of(data: dict[str, Any]) -> int | str:
    return data.get("schema_version", "?")


def load_record(data: Any) -> Loaded:
    """The stored JSON as a RunResult, by the policy above."""
    if not isinstance(data, dict):
        return Loaded(None, problem="not a JSON object")
    try:
        return Loaded(RunResult.model_validate(data))
    except ValidationError as exc:
        first = exc
    version = version_of(data)
    newer = isinstance(version, int) and version > SCHEMA_VERSION
    if not newer:
        return Loaded(None, problem=_first_error(first))
    # A newer record: drop what this version does not know, then validate what is left.
    data, dropped, error = copy.deepcopy(data), [], first
    for _ in range(_MAX_PASSES):
        extra = [e["loc"] for e in error.errors() if e["type"] == "extra_forbidden"]
        if not extra:
            break
        for loc in extra:
            _remove(data, loc)
            dropped.append(".".join(str(part) for part in loc))
        data["schema_version"] = version  # kept: the record says which specops wrote it
        try:
            return Loaded(RunResult.model_validate(data), tuple(dropped))
        except ValidationError as exc:
            error = exc
    return Loaded(None, problem=f"written by a newer specops (schema {version}, this one reads {SCHEMA_VERSION}) "
                                f"and {_first_error(error)}")


def _first_error(exc: ValidationError) -> str:
    e = exc.errors()[0]
    where = ".".join(str(part) for part in e["loc"]) or "the record"
    return f"{exc.error_count()} field error(s), first {where}: {e['msg']}"


def _remove(data: Any, loc: tuple) -> None:
    *path, last = loc
    node = data
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return  # pydantic names a union member's path that the data does not have: nothing to drop
    if isinstance(node, dict):
        node.pop(last, None)

"""The cross-field rules a deployment's form checks for the profile it runs, when a run is created: what the loader
(the worker's own check, specops/profile/loader.py) refuses of an override against that profile's other fields.

Found by loading the profile once per value of each of its finite keys (choices, booleans, whole numbers of at most
FINITE values), once, when the forms are narrowed (`make up`); refused values are grouped by the loader's reason,
which becomes the refusal: `'method.prompt_lookup_min=5' is not one of ['with profile ngram-local: method:
prompt_lookup_min (5) must not exceed prompt_lookup_max (3)']`. A key of another method's or backend's fields (the
profile's method or backend has none such) is refused naming the keys it has. Overrides that only refuse each other
(two given together) are the worker's to say, naming the run's `overrides` (prefect_adapters/refusal.py).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from specops.fleet.override_rules import override_shapes
from specops.fleet.value_patterns import ANY, Shape
from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile

FINITE = 16  # whole-number keys with at most this many values are loaded with each
_VARIANT_SECTIONS = ("method", "backend")  # a union: the profile's kind decides which keys it has


def _values(shape: Shape) -> list[str]:
    """The values of a finite key, as an override writes them ([] for any other)."""
    if shape.choices:
        return list(shape.choices)
    if shape.words == "true or false":
        return ["true", "false"]
    bounds = re.fullmatch(r"a whole number from (\d+) to (\d+)( or null)?", shape.words)
    if bounds and int(bounds[2]) - int(bounds[1]) < FINITE:
        return [str(n) for n in range(int(bounds[1]), int(bounds[2]) + 1)] + (["null"] if bounds[3] else [])
    return []


def _keys_of(resolved: dict[str, Any], prefix: str) -> list[str]:
    out = []
    for name, value in resolved.items():
        out.append(f"{prefix}{name}")
        if isinstance(value, dict):
            out += _keys_of(value, f"{prefix}{name}.")
    return out


def _reason(error: ProfileError) -> str:
    return "; ".join(f"{field}: {message}" if field else message for field, message in error.problems)


@cache
def profile_item_rules(profile: str) -> tuple[dict[str, Any], ...]:
    """Rules for one override of a run of `profile` (refusals in the override item schema's form)."""
    loaded = load_profile(profile)
    has = set(_keys_of(loaded.resolved, ""))
    free = [shown.removesuffix(".<key>") for shown, _ in override_shapes().values()  # engine args: any key below
            if shown.endswith(".<key>") and shown.removesuffix(".<key>") in has]
    rules: list[dict[str, Any]] = []
    own = [re.escape(k) for k in sorted(has) if k.split(".")[0] in _VARIANT_SECTIONS]
    own += [re.escape(k) + r"\.[^=]+" for k in sorted(free) if k.split(".")[0] in _VARIANT_SECTIONS]
    names = {s: ", ".join(sorted(k.split(".", 1)[1] for k in has if k.startswith(s + ".") and k.count(".") == 1))
             for s in _VARIANT_SECTIONS}
    rules.append({"if": {"pattern": f"^(?!(?:{'|'.join(own)})=)(?:{'|'.join(_VARIANT_SECTIONS)})\\."},
                  "then": {"enum": [f"with profile {profile}: not a key of its method {loaded.profile.method.kind} "
                                    f"({names['method']}) nor of its backend {loaded.profile.backend.kind} "
                                    f"({names['backend']})"]}})
    refused: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (key, reason with "(the value)") -> values, reasons
    with _quietly():
        for shown, shape in override_shapes().values():
            if shown not in has or shape.pattern == ANY:
                continue
            for value in _values(shape):
                try:
                    load_profile(profile, [f"{shown}={value}"])
                except ProfileError as error:
                    why = _reason(error)
                    refused.setdefault((shown, why.replace(f"({value})", "(the value)")), []).append((value, why))
    rules += [{"if": {"pattern": f"^{re.escape(shown)}=(?:{'|'.join(re.escape(v) for v, _ in values)})$"},
               "then": {"enum": [f"with profile {profile}: {values[0][1] if len(values) == 1 else reason}"]}}
              for (shown, reason), values in refused.items()]
    return tuple(rules)


@contextmanager
def _quietly() -> Iterator[None]:
    """The loader's warnings unsaid while it is probed: they are about values nobody asked for."""
    logger = logging.getLogger("specops.profile")
    before, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = before

"""What an override's value may be, as a regular expression a JSON schema's `pattern` holds, and in words: a profile
field's type and bounds as the loader reads `key=value` (YAML 1.1, PyYAML's resolvers; pydantic in lax mode).

The server checks a run's parameters against its deployment's schema when the run is created (specops/fleet/forms.py),
so a bound here is a refusal at creation rather than on the worker 30 s later. Where YAML would read a value another
way than these patterns do (`1_000`, an exponent, a leading zero: octal), the pattern leaves it to the loader (ANY)
rather than refuse what the worker would take.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

ANY = r".*"
NULL = r"(?:null|Null|NULL|~)"  # PyYAML's null resolver (an empty value is the empty string: apply_overrides)
# pydantic's lax bool (true/false/yes/no/on/off/t/f/y/n/1/0, any case), which takes YAML's bools and those strings
BOOLEAN = r"(?i:true|false|yes|no|on|off|t|f|y|n|1|0)"
_EXPONENT = r"[-+]?[0-9][0-9_]*\.[0-9_]*[eE][-+][0-9]+"  # YAML 1.1 floats with an exponent: left to the loader
# YAML 1.1 ints written otherwise than plain decimal (0x10, 010: octal 8, 1_000, +5, 1:30): left to the loader
_OTHER_INT = r"[-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0[0-7_]+|[1-9][0-9_]*[_:][0-9_:]*)|\+[0-9][0-9_]*"


@dataclass(frozen=True)
class Shape:
    pattern: str  # the value's regular expression (whole value)
    words: str  # what it is, for a person: "a whole number from 1 to 100000"
    choices: tuple[str, ...] = ()  # a choice's values (shapes of one key in several variants merge them)

    def merged(self, other: Shape) -> Shape:
        """One key's shape in two variants of a union (method.kind in each method): a value of either."""
        if self == other:
            return self
        if self.choices and other.choices:
            return enum_shape([*self.choices, *(c for c in other.choices if c not in self.choices)])
        if ANY in (self.pattern, other.pattern):
            return ANY_SHAPE
        if self.words in other.words or other.words in self.words:  # "1 to 64" and "1 to 64 or null": the wider
            return max(self, other, key=lambda shape: len(shape.words))
        words = self.words if self.words == other.words else f"{self.words}, or {other.words}"
        return Shape(f"(?:{self.pattern}|{other.pattern})", words)


def _same_width(a: str, b: str) -> list[str]:
    """Alternatives matching a..b, both of one width (a's first digit is not 0: no leading zeros)."""
    if len(a) == 1:
        return [f"[{a}-{b}]" if a != b else a]
    if a[0] == b[0]:
        return [a[0] + p for p in _same_width(a[1:], b[1:])]
    out = []
    low_full, high_full = a[1:] == "0" * (len(a) - 1), b[1:] == "9" * (len(b) - 1)
    start, end = int(a[0]) + (0 if low_full else 1), int(b[0]) - (0 if high_full else 1)
    if not low_full:
        out += [a[0] + p for p in _same_width(a[1:], "9" * (len(a) - 1))]
    if start <= end:
        out.append((f"[{start}-{end}]" if start != end else str(start)) + f"[0-9]{{{len(a) - 1}}}")
    if not high_full:
        out += [b[0] + p for p in _same_width("0" * (len(b) - 1), b[1:])]
    return out


def integer_range(lo: int | None, hi: int | None) -> str:
    """A regular expression of the whole numbers lo..hi (None: unbounded), written without leading zeros."""
    lo = 0 if lo is None else lo
    if lo < 0:  # no profile field takes negative numbers; one that did would take any
        return r"(?:0|-?[1-9][0-9]*)"
    parts: list[str] = []
    if lo == 0:
        parts.append("0")
        lo = 1
    top = hi if hi is not None else 10 ** len(str(lo)) - 1
    for width in range(len(str(lo)), len(str(top)) + 1):
        a, b = max(lo, 10 ** (width - 1)), min(top, 10 ** width - 1)
        parts += _same_width(str(a), str(b)) if a <= b else []
    if hi is None:
        parts.append(f"[1-9][0-9]{{{len(str(top))},}}")
    return "(?:" + "|".join(parts) + ")"


def number_range(low: float | None, low_open: bool, hi: float | None) -> str:
    """Decimal numbers (YAML 1.1 floats and ints) from `low` (excluded when low_open) to `hi`, for the bounds profile
    fields have: a lower bound of 0 or none, a whole upper bound or none. Others: any number (the loader decides)."""
    number = r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+"
    if low not in (None, 0) or (hi is not None and hi != int(hi)):
        return f"(?:-?(?:{number})|{_EXPONENT})"
    zero = r"0*(?:\.0*)?|\.0+"
    positive = r"0*\.[0-9]*[1-9][0-9]*"  # below 1
    if hi is None:
        above = r"[1-9][0-9]*(?:\.[0-9]*)?"
    else:
        whole = int(hi)
        above = (f"{integer_range(1, whole - 1)}(?:\\.[0-9]*)?|" if whole > 1 else "") + f"{whole}(?:\\.0*)?"
    parts = [positive, above, _EXPONENT] + ([] if low_open else [zero])
    if low is None:
        parts.append(f"-(?:{number})")
    return "(?:" + "|".join(parts) + ")"


def shown(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def bounds_words(kind: str, low: float | None, low_open: bool, high: float | None) -> str:
    what = "a whole number" if kind == "integer" else "a number"
    if low is not None and high is not None:
        return f"{what} {'above' if low_open else 'from'} {shown(low)} {'up ' if low_open else ''}to {shown(high)}"
    if low is not None:
        return f"{what} {'above' if low_open else 'of'} {shown(low)}{'' if low_open else ' or more'}"
    if high is not None:
        return f"{what} up to {shown(high)}"
    return what


def enum_shape(values: list) -> Shape:
    texts = tuple(str(v) for v in values)
    return Shape("(?:" + "|".join(re.escape(t) for t in texts) + ")", "one of " + ", ".join(texts), texts)


ANY_SHAPE = Shape(ANY, "any value (the loader checks it)")


def resolve(node: dict, defs: dict) -> dict:
    while "$ref" in node:
        node = {**defs[node["$ref"].rsplit("/", 1)[1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def shape_of(node: dict, defs: dict) -> Shape:
    """A profile schema node's value as an override writes it; ANY where the loader's own validation decides."""
    node = resolve(node, defs)
    if "enum" in node:
        return enum_shape(node["enum"])
    if "const" in node:
        return enum_shape([node["const"]])
    options = node.get("anyOf") or node.get("oneOf")
    if options:
        shapes = [shape_of(o, defs) for o in options]
        if any(s.pattern == ANY for s in shapes):
            return ANY_SHAPE
        words = " or ".join(dict.fromkeys(s.words for s in shapes))
        return Shape("(?:" + "|".join(dict.fromkeys(s.pattern for s in shapes)) + ")", words,
                     sum((s.choices for s in shapes), ()) if all(s.choices for s in shapes) else ())
    kind = node.get("type")
    if kind in ("integer", "number"):
        low, low_open = node.get("minimum"), False
        if "exclusiveMinimum" in node:
            low, low_open = node["exclusiveMinimum"], True
        high = node.get("maximum")
        pattern = f"(?:{integer_range(low, high)}|{_OTHER_INT})" if kind == "integer" else \
            number_range(low, low_open, high)
        return Shape(pattern, bounds_words(kind, low, low_open, high))
    if kind == "boolean":
        return Shape(BOOLEAN, "true or false")
    if kind == "null":
        return Shape(NULL, "null")
    return ANY_SHAPE

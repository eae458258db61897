"""Conformance findings: what a backend renders and sends, against its version's field lists."""
from __future__ import annotations


def flag_names(argv: list[str]) -> list[str]:
    """`--name value` / `--name=value` flags of an argv, without dashes."""
    return [a.split("=", 1)[0].lstrip("-") for a in argv if a.startswith("--")]


def not_in(label: str, names, known, what: str) -> list[str]:
    """One finding per name outside `known` (names compared without leading dashes)."""
    known = {str(k).lstrip("-") for k in known}
    return [f"{label}: {n!r} is not {what}" for n in names if str(n).lstrip("-") not in known]


def request_findings(label: str, fields, declared, read, ignored=frozenset()) -> list[str]:
    """A request's fields against the inputs the served model declares and reads; `ignored` lists
    inputs known to be declared but unread (and why they are sent anyway is said where they are declared)."""
    out = []
    for name in fields:
        if name not in declared:
            out.append(f"{label}: input {name!r} is not declared by the served model")
        elif name not in read and name not in ignored:
            out.append(f"{label}: input {name!r} is declared but never read by the served model")
    return out

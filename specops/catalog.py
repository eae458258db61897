"""`specops profiles`: shipped profiles and the method x backend matrix."""
from __future__ import annotations

from specops.backends import BACKENDS
from specops.methods import METHODS
from specops.profile.errors import ProfileError
from specops.profile.loader import list_profile_names, load_profile


def matrix_lines() -> list[str]:
    backends = BACKENDS.names()
    width = max(len(m) for m in METHODS.names()) + 2
    lines = ["method".ljust(width) + "  ".join(backends)]
    for method in METHODS.names():
        cells = [("yes" if BACKENDS.get(b).supports(method) else "-").ljust(len(b)) for b in backends]
        lines.append(method.ljust(width) + "  ".join(cells) + f"  {METHODS.get(method).summary}")
    return lines


def format_catalog() -> str:
    lines = ["profiles:"]
    for name in list_profile_names():
        try:
            p = load_profile(name).profile
            lines.append(f"  {name:<27} {p.method.kind:<13} {p.backend.kind:<14} {p.description}")
        except ProfileError as err:
            lines.append(f"  {name:<28} INVALID: {err}")
    lines += ["", "method x backend:"] + [f"  {line}" for line in matrix_lines()]
    return "\n".join(lines)

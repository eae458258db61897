"""Markdown helpers for the generated reference pages: table cells that survive `|`, `<...>` and newlines."""
from __future__ import annotations

import json
import re


def cell(text: object) -> str:
    """Text for one table cell, on one line: `|`, `<` and `>` outside code spans escaped (<method>-<backend> is a
    placeholder, not an HTML tag); code spans as they are (the table extension splits no row at their pipes)."""
    parts = re.split(r"(`[^`]*`)", " ".join(str(text).split()))
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;").replace(">", "&gt;").replace("|", r"\|")
                   for p in parts)


def code(value: object) -> str:
    """A value as inline code (JSON-like for containers: what a profile's YAML would say)."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
    return f"`{text}`" if text != "" else '`""`'


def table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def generated_note(source: str) -> str:
    """The line that opens every generated page: what it is built from, so nobody edits the output."""
    return (f'!!! info "Generated"\n    This page is built from {source} each time the docs are built (`make docs`): '
            "edit the code, not the page.\n")

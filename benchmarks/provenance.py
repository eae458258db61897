"""A benchmark's figures as data, with where they come from, for the docs to render.

A script ends with `record(name, title, lines)`: the lines it printed (Markdown: a table, a sentence) go to
docs/data/<name>.json with the date and time (UTC), the host's CPU model and cores, the specops commit (`-dirty`
when tracked files differ from it) and the command that ran. The docs build renders each such file where a page
says `<!-- figures: <name> -->`, with that provenance and its age on the day the docs are built: a re-run updates
the page, an old figure says how old it is. `--figures PATH` (every script that records takes it) writes elsewhere,
`--figures -` not at all.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def _host() -> str:
    from specops.cost.nvml import cpu_model

    return f"{cpu_model()} ({os.cpu_count()} cores)"


def _command() -> str:
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    return shlex.join([".venv/bin/python", str(shown), *sys.argv[1:]])


def add_argument(parser) -> None:
    """`--figures PATH`: where record() writes (default docs/data/<name>.json; `-`: nowhere)."""
    parser.add_argument("--figures", default=None, metavar="PATH",
                        help="write the figures with their provenance here (default docs/data/<name>.json; "
                             "'-': do not write them)")


def record(name: str, title: str, lines: list[str], to: str | None = None) -> Path | None:
    """Write the figures `lines` (Markdown) of benchmark `name` with their provenance; the path written, or None."""
    if to == "-":
        return None
    path = Path(to) if to else DATA / f"{name}.json"
    data = {"title": title, "measured": datetime.now(UTC).isoformat(timespec="seconds"), "host": _host(),
            "commit": _commit(), "command": _command(), "figures": lines}
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1) + "\n")
    partial.replace(path)
    print(f"figures with their provenance: {path}")
    return path


def render(path: Path, today: date) -> str:
    """The Markdown of one figures file: its provenance (and age on `today`) in a note, then its figures."""
    data = json.loads(path.read_text())
    measured = datetime.fromisoformat(data["measured"])
    age = (today - measured.date()).days
    when = f"{measured:%Y-%m-%d}" + (f", {age} days before this page was built" if age > 0 else ", the day this "
                                     "page was built")
    lines = [f'!!! note "Measured {when}"', f"    **{data['title']}**. Host: {data['host']}; specops commit "
             f"`{data['commit']}`; command: `{data['command']}`."]
    if data.get("note"):
        lines.append(f"    {data['note']}")
    return "\n".join(lines + ["", *data["figures"], ""])

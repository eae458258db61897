"""The picture of a real report in the README and the docs: a run's comparison.png, checked in with where it comes
from, read from the run's own manifest.json.

    .venv/bin/python tools/docs/report_picture.py artifacts/<profile>/<run-id>

copies the run's comparison.png to docs/images/report-comparison.png and writes docs/data/report_picture.json
(benchmarks/provenance.py's format): when the run started, its host's CPU model and cores, the specops commit it
ran (`-dirty` when its checkout had changes), the `specops run` command that makes such a run (the profile and the
run's overrides), and the report's headline and per-category table. The README states the same beside the picture.
"""
from __future__ import annotations

import argparse
import json
import shlex
import shutil
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMAGE = ROOT / "docs" / "images" / "report-comparison.png"
DATA = ROOT / "docs" / "data" / "report_picture.json"


def headline(report: str) -> list[str]:
    """The report's verdict line and its per-category table (when the run had categories)."""
    lines = report.splitlines()
    found = [next(line for line in lines if line.startswith(("**VALID**", "**INVALID**", "**UNCHECKED**"))), ""]
    start = next((i for i, line in enumerate(lines) if line.startswith("| category |")), None)
    if start is not None:
        end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
        found += lines[start:end]
    return found


def provenance(run_dir: Path) -> dict:
    m = json.loads((run_dir / "manifest.json").read_text())
    software = m["software"]
    command = shlex.join([".venv/bin/specops", "run", m["profile"], *(a for o in m["overrides"] for a in ("--set", o))])
    return {"title": f"comparison.png of {m['profile']} run {m['run_id']} (the report's plot)",
            "measured": datetime.fromtimestamp(m["started_at"], UTC).isoformat(timespec="seconds"),
            "host": f"{m['host']['cpu_model']} ({m['host']['cores']} cores)",
            "commit": software["git_commit"][:7] + ("-dirty" if software.get("git_dirty") else ""),
            "command": command, "figures": headline((run_dir / "report.md").read_text())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    args = parser.parse_args()
    data = provenance(args.run_dir)
    shutil.copyfile(args.run_dir / "comparison.png", IMAGE)
    DATA.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{IMAGE}\n{DATA}\nmade by: {data['command']}")


if __name__ == "__main__":
    main()

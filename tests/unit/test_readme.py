"""The README is one screen: the two commands first (the test one is what CI runs), a picture of a real report with
the command that made it, links into the docs. What it no longer carries (the GPU table, the variables) the docs'
reference pages build from the code (tests/unit/tools/test_docs.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_the_readme_is_one_screen_and_opens_with_the_two_commands():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    first = re.search(r"```bash\n(.*?)```", text, flags=re.S)[1].splitlines()
    assert [line.split()[:2] for line in first[:2]] == [["make", "demo"], ["make", "test"]]
    assert text.index("```bash") < text.index("\n## ")  # before any section


def test_ci_runs_the_readmes_test_command():
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == ["make test"]


def test_the_readmes_links_resolve_and_its_picture_says_how_it_was_made():
    text = README.read_text()
    for target in re.findall(r"\]\(([^)#]+)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), target
    (picture,) = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    made = json.loads((ROOT / "docs" / "data" / "report_picture.json").read_text())
    assert (ROOT / picture).is_file() and picture == "docs/images/report-comparison.png"
    command = " ".join(re.search(r"made[^`]*by:\n\n```bash\n(.*?)```", text, flags=re.S)[1].replace("\\\n", " ").split())
    assert command == made["command"]
    assert all(made[key] in " ".join(text.split()) for key in ("host", "commit")) and made["measured"][:10] in text

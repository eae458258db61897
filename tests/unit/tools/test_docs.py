"""The docs site (mkdocs.yml, docs/, tools/docs/): it builds with --strict, its reference pages are built from the
code at build time (a field, a flag and a setting added in a scratch copy show up in that copy's site), and every
measured figure it shows carries its date, host, commit and command (benchmarks/provenance.py)."""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
GENERATED = ("reference/profile.md", "reference/cli.md", "reference/environment.md", "reference/exit-codes.md",
             "reference/methods-and-backends.md", "reference/profiles.md", "reference/deployments.md",
             "how-to/extend.md")
FIGURES = re.compile(r"^<!-- figures: ([\w-]+) -->$", re.M)


def build(checkout: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=checkout, capture_output=True, text=True, env=env, timeout=300)


def text(site: Path, page: str) -> str:
    """A built page's text, tags dropped and entities decoded."""
    raw = (site / page.removesuffix(".md") / "index.html").read_text()
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


def row(site: Path, page: str, needle: str) -> str:
    """The text of the table row of a built page that holds `needle`, its cells joined by ' | '."""
    raw = (site / page.removesuffix(".md") / "index.html").read_text()
    (found,) = [r for r in re.findall(r"<tr>(.*?)</tr>", raw, flags=re.S) if needle in r]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", found, flags=re.S)
    return " | ".join(html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(ROOT, out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_the_docs_build_strict_and_every_reference_page_is_generated_not_checked_in(site):
    for page in GENERATED:
        assert (site / page.removesuffix(".md") / "index.html").is_file(), page
        assert not (ROOT / "docs" / page).exists(), f"docs/{page} is generated: it must not be checked in"


def test_the_reference_holds_every_field_subcommand_setting_and_exit_code(site):
    from cli.common import EXIT_CODES
    from cli.main import _parser
    from specops.profile.catalog import gpu_profile_table
    from specops.profile.schema import Profile
    from specops.settings import Settings, env_name

    fields = text(site, "reference/profile.md")
    schema = Profile.model_json_schema()
    for model in [schema, *schema["$defs"].values()]:  # every section, every backend's and method's
        for name, prop in model["properties"].items():
            about = " ".join(prop.get("description", "").split()).replace("`", "")
            assert name in fields and about in fields, f"{model['title']}.{name}"
    commands = text(site, "reference/cli.md")
    sub = next(a for a in _parser([])._actions if hasattr(a, "choices") and isinstance(a.choices, dict))
    for name, parser in sub.choices.items():
        assert f"specops {name}" in commands
        assert all(flag in commands for a in parser._actions for flag in a.option_strings
                   if flag not in ("--debug", "-h", "--help"))
    variables = text(site, "reference/environment.md")
    assert all(env_name(name) in variables for name in Settings.model_fields)
    codes = text(site, "reference/exit-codes.md")
    assert all(str(code) in codes and " ".join(meaning.split()).replace("`", "") in codes
               for code, meaning in EXIT_CODES.values())
    gpu = text(site, "reference/methods-and-backends.md")
    assert all(row.split("|")[1].strip(" `") in gpu for row in gpu_profile_table()[2:])


def _scratch_copy(to: Path) -> Path:
    """The checkout's files as they are in the working tree (tracked, and new ones not ignored)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (to / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, to / rel)
    return to


def _add(path: Path, after: str, line: str) -> None:
    source = path.read_text()
    assert after in source, f"{path}: no {after!r} to add after"
    path.write_text(source.replace(after, after + line, 1))


def test_a_field_a_flag_and_a_setting_added_in_a_scratch_copy_appear_in_its_built_reference(tmp_path):
    copy = _scratch_copy(tmp_path / "checkout")
    _add(copy / "specops/profile/schema.py", "class Comparison(Section):\n",
         '    zebra_probe_count: Count = Field(7, ge=3, le=9, description="a field only this scratch copy has")\n')
    _add(copy / "cli/run.py", '    run.add_argument("--run-id", help="name of the run directory (default: timestamp)")\n',
         '    run.add_argument("--zebra-probe-flag", metavar="STRIPES", help="a flag only this scratch copy has")\n')
    _add(copy / "specops/settings.py", "alias_generator=AliasGenerator(validation_alias=str.upper))\n",
         '    specops_zebra_probe: int = Field(11, description="a setting only this scratch copy has")\n')
    done = build(copy, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    site = tmp_path / "site"
    assert row(site, "reference/profile.md", "zebra_probe_count") == (
        "zebra_probe_count | integer | min 3, max 9 | 7 | a field only this scratch copy has")
    assert row(site, "reference/cli.md", "zebra-probe-flag") == (
        "--zebra-probe-flag STRIPES | - | a flag only this scratch copy has")
    assert row(site, "reference/environment.md", "ZEBRA") == (
        "SPECOPS_ZEBRA_PROBE | 11 | a setting only this scratch copy has")


def test_every_figure_the_docs_name_has_its_data_with_date_host_commit_and_command():
    pages = [p for p in (ROOT / "docs").rglob("*.md")]
    named = {m for page in pages for m in FIGURES.findall(page.read_text())}
    assert named, "the docs show no measured figure at all"
    for name in named:
        data = json.loads((ROOT / "docs" / "data" / f"{name}.json").read_text())
        assert all(data.get(key) for key in ("measured", "host", "commit", "command", "figures")), name
        date.fromisoformat(data["measured"][:10])


def test_a_page_naming_figures_that_have_no_data_fails_the_build(tmp_path):
    copy = _scratch_copy(tmp_path / "checkout")
    (copy / "docs" / "figures.md").write_text((copy / "docs" / "figures.md").read_text()
                                              + "\n<!-- figures: no_such_bench -->\n")
    done = build(copy, tmp_path / "site")
    assert done.returncode != 0 and "no_such_bench" in done.stderr

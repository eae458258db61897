"""mkdocs hooks (mkdocs.yml `hooks:`): the pages built from the code, added to the site at build time and never
checked in, and the measured figures rendered from their data.

- on_config: the checkout that holds mkdocs.yml goes first on sys.path, so the reference documents that checkout's
  code (a scratch copy's too), not whichever specops the venv has installed.
- on_files: the reference pages (tools/docs/reference.py) and CONTRIBUTING.md's recipes as a how-to page.
- on_page_markdown: `<!-- figures: NAME -->` becomes docs/data/NAME.json rendered with its provenance and age
  (benchmarks/provenance.py); a page naming data that is not there fails the build.
"""
from __future__ import annotations

import re
import sys
from datetime import UTC, datetime
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

FIGURES = re.compile(r"^<!-- figures: ([\w-]+) -->$", re.M)
# CONTRIBUTING.md stays at the root (where contributors look for it); the site shows it among the how-tos.
CONTRIBUTING_PAGE = "how-to/extend.md"


def on_config(config):
    root = str(Path(config.config_file_path).resolve().parent)
    if sys.path[0] != root:
        sys.path.insert(0, root)
    return config


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def on_files(files, config):
    from tools.docs.reference import render_all

    root = _root(config)
    pages = render_all(root)
    recipes = (root / "CONTRIBUTING.md").read_text()
    pages[CONTRIBUTING_PAGE] = recipes.replace("# Contributing", "# A new backend, method, tool or flow", 1)
    for path, content in pages.items():
        if files.get_file_from_path(path) is not None:
            raise PluginError(f"docs/{path} is generated at build time: remove the checked-in copy")
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown, page, config, files):
    from benchmarks.provenance import render

    data = Path(config.docs_dir) / "data"
    today = datetime.now(UTC).date()

    def figures(match: re.Match) -> str:
        path = data / f"{match[1]}.json"
        if not path.is_file():
            raise PluginError(f"{page.file.src_uri}: names figures {match[1]!r}, but there is no docs/data/"
                              f"{match[1]}.json (run the benchmark that writes it)")
        return render(path, today)

    return FIGURES.sub(figures, markdown)

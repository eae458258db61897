"""Size budgets of the source: no module over 300 lines, no function or method over 50, at most five modules at
the root of specops/, one folder per engine family under specops/backends/, and a total (every tracked .py outside
tests/, tools/ included) that only a commit saying why raises.

Every tracked .py file counts, as it is in the working tree, but the tests', tools/ and what a build or an
environment leaves (.venv*, .cache, artifacts/, build/, dist/). A function's lines run from its `def` (its
decorators not counted) to its last line, as ast reports them.
"""
from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from specops.backends import BACKENDS

ROOT = Path(__file__).resolve().parents[2]
MODULE_LINES, FUNCTION_LINES, SPECOPS_ROOT_MODULES = 300, 50, 5
# 32,117 on 2026-12-06 (issues 49-54 added ~3,800 to 28,252); issue 52 asks 28,000: lower it as the code shrinks.
# Raised by 50 to hold 32,237: the catalogue of figures (results/figures.py, one Figure per figure
# in place of five tables' own tuples, +33 net) and the floors' moves (profile/workload.py, +16 net).
# Lowered to 32,230 (2026-12-07): tasks/render.py folded into tasks/serve.py, swept_methods beside ALL_METHODS.
SOURCE_LINES = 32_230
EXEMPT_TOP = {"tests", "tools", ".cache", "artifacts"}
BUILD_DIRS = {"build", "dist", "__pycache__"}


def budgeted(rel: str) -> bool:
    """Whether the tracked file `rel` (a path from the repository root) is held to the budgets."""
    parts = rel.split("/")
    top = parts[0] if len(parts) > 1 else ""
    return not (top in EXEMPT_TOP or top.startswith(".venv") or BUILD_DIRS.intersection(parts[:-1]))


def over_budget(path: Path, rel: str) -> list[str]:
    """`rel:line what has N lines` for the module and each function or method of `path` over its budget."""
    text = path.read_text(encoding="utf-8")
    found = []
    if (lines := len(text.splitlines())) > MODULE_LINES:
        found.append(f"{rel}:1 module has {lines} lines (budget {MODULE_LINES})")
    for node in ast.walk(ast.parse(text, filename=rel)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if (lines := node.end_lineno - node.lineno + 1) > FUNCTION_LINES:
                found.append(f"{rel}:{node.lineno} {node.name}() has {lines} lines (budget {FUNCTION_LINES})")
    return found


def tracked_sources() -> list[str]:
    """The budgeted .py files git tracks that the working tree holds (a file deleted there is gone)."""
    listed = subprocess.run(["git", "ls-files", "-z", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    return sorted(rel for rel in listed.stdout.split("\0") if rel and budgeted(rel) and (ROOT / rel).is_file())


def test_no_module_over_300_lines_and_no_function_over_50():
    sources = tracked_sources()
    assert "specops/backends/__init__.py" in sources and not [rel for rel in sources if rel.startswith("tests/")]
    found = [line for rel in sources for line in over_budget(ROOT / rel, rel)]
    assert not found, "over the size budgets (split by what each part does):\n" + "\n".join(found)


def _function(name: str, lines: int, indent: str = "", keyword: str = "def") -> str:
    """Source of a function `lines` long, from its def to its return."""
    return f"{indent}{keyword} {name}(self):\n" + f"{indent}    x = 1\n" * (lines - 2) + f"{indent}    return x\n"


def test_the_budget_check_flags_a_51_line_function_and_a_301_line_module_and_nothing_within(tmp_path):
    source = tmp_path / "source.py"
    source.write_text("@decorated\n" + _function("f", 50) + "\n\nclass C:\n" + _function("m", 50, "    ", "async def"))
    assert over_budget(source, "source.py") == []  # each 50 lines: the decorator does not count
    source.write_text(_function("f", 51) + "\n\nclass C:\n" + _function("m", 51, "    ", "async def"))
    assert over_budget(source, "source.py") == ["source.py:1 f() has 51 lines (budget 50)",
                                                "source.py:55 m() has 51 lines (budget 50)"]
    source.write_text("x = 1\n" * 300)
    assert over_budget(source, "source.py") == []
    source.write_text("x = 1\n" * 301)
    assert over_budget(source, "source.py") == ["source.py:1 module has 301 lines (budget 300)"]
    paths = ("tests/unit/t.py", "tools/x.py", ".venv-vllm/lib/y.py", ".cache/z.py", "artifacts/a.py",
             "build/lib/specops/b.py", "specops/c.py", "benchmarks/d.py", "setup.py")
    assert [rel for rel in paths if budgeted(rel)] == ["specops/c.py", "benchmarks/d.py", "setup.py"]


def test_specops_root_holds_at_most_five_modules():
    """Code lives in a package named for its purpose; the root keeps the few modules every package uses."""
    root = [rel for rel in tracked_sources() if rel.count("/") == 1 and rel.startswith("specops/")]
    modules = sorted(rel for rel in root if rel != "specops/__init__.py")
    assert len(modules) <= SPECOPS_ROOT_MODULES, f"{len(modules)} modules at the root of specops/: {modules}"


def test_every_backend_is_implemented_in_the_folder_of_its_engine_family():
    """specops/backends/<family>/ holds each backend whose kind is `<family>` or `<family>-<variant>`."""
    wrong = []
    for kind in BACKENDS.names():
        module = BACKENDS.get(kind).impl.partition(":")[0]
        parts, family = module.split("."), kind.split("-")[0]
        path = ROOT.joinpath(*parts).with_suffix(".py")
        if parts[:3] != ["specops", "backends", family] or len(parts) != 4 or not path.is_file():
            wrong.append(f"{kind}: {module} (want specops.backends.{family}.<module>, a file that exists)")
    assert BACKENDS.names() and not wrong, "\n".join(wrong)


def source_lines() -> int:
    """Lines of every tracked .py outside tests/ (tools/ and benchmarks/ included), as the working tree holds them."""
    listed = subprocess.run(["git", "ls-files", "-z", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    files = [ROOT / rel for rel in listed.stdout.split("\0") if rel and not rel.startswith("tests/")]
    return sum(len(path.read_text(encoding="utf-8").splitlines()) for path in files if path.is_file())


def test_the_source_total_stays_within_its_budget():
    total = source_lines()
    assert total > 20_000, total  # the count reads the source, not an empty listing
    assert total <= SOURCE_LINES, f"{total} source lines, budget {SOURCE_LINES}: shrink, or raise it saying why"

"""Offline prompt sources for draft training: HumanEval, the Python stdlib, conversation files."""
from __future__ import annotations

import ast
import math
import os
import random
import sysconfig
import tokenize
from dataclasses import dataclass
from pathlib import Path

from specops.bench.conversations import DataFileError, read_conversations
from specops.bench.prompts import load_prompts

# Directories of the stdlib that are tests, tools or vendored code rather than library API.
_SKIP_DIRS = frozenset({"test", "tests", "idlelib", "lib2to3", "site-packages", "dist-packages", "__pycache__"})
DOCSTRING_CHARS = (40, 1200)
_PER_FILE = 4  # functions taken from one module, so a small sample spans many modules


@dataclass(frozen=True)
class PromptItem:
    id: str
    source: str
    text: str


def humaneval_prompts(skip: int = 0) -> list[PromptItem]:
    """HumanEval problems' prompts after the first `skip` (those the benchmark measures on)."""
    if skip < 0:
        raise ValueError(f"skip must be >= 0, got {skip}")
    prompts = load_prompts("humaneval", limit=None)
    return [PromptItem(f"humaneval/{i}", "humaneval", text) for i, text in enumerate(prompts) if i >= skip]


def stdlib_prompts(limit: int, seed: int, stdlib: Path | None = None) -> list[PromptItem]:
    """Up to `limit` code-completion prompts (signature + docstring) from stdlib functions.

    Files are visited in a seeded order and each gives at most a few functions, so the
    selection is deterministic for a seed and parsing stops as soon as there are enough.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    root = Path(stdlib or sysconfig.get_paths()["stdlib"])
    files = _stdlib_files(root)
    rng = random.Random(seed)
    rng.shuffle(files)
    per_file = max(_PER_FILE, math.ceil(2 * limit / max(1, len(files))))
    picked = _Picked(limit)
    spare: list[PromptItem] = []
    for path in files:
        if picked.full():
            break
        candidates = _file_prompts(root, path)
        rng.shuffle(candidates)
        for item in candidates:
            if picked.full(per_file, path) or not picked.add(item, path):
                spare.append(item)
    # Every file parsed and still short: fill up from what the per-file cap left out.
    rng.shuffle(spare)
    for item in spare:
        if picked.full():
            break
        picked.add(item)
    return picked.items


class _Picked:
    """Prompts chosen so far: unique ids and texts (overloads and copies share a docstring)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.items: list[PromptItem] = []
        self._keys: set[str] = set()
        self._per_file: dict[Path, int] = {}

    def full(self, per_file: int | None = None, path: Path | None = None) -> bool:
        """No room left overall, or (given per_file and path) none left for that file."""
        if len(self.items) >= self.limit:
            return True
        return per_file is not None and self._per_file.get(path, 0) >= per_file

    def add(self, item: PromptItem, path: Path | None = None) -> bool:
        """Take item unless its id or text is already taken; True when taken."""
        if item.id in self._keys or item.text in self._keys:
            return False
        self._keys.update((item.id, item.text))
        self.items.append(item)
        if path is not None:
            self._per_file[path] = self._per_file.get(path, 0) + 1
        return True


def conversation_prompts(path: Path) -> list[PromptItem]:
    """The first user turn of each conversation in a conversation JSONL."""
    items = []
    for conversation in read_conversations(path):
        user = next((t.content for t in conversation.turns if t.role == "user"), None)
        if user is not None and user.strip():
            items.append(PromptItem(f"conversations/{conversation.id}", "conversations", user))
    if not items:
        raise DataFileError(path, "no conversation has a non-empty user turn")
    return items


def _stdlib_files(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        # Prune in place so os.walk never descends into skipped trees.
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("config-"))
        found.extend(Path(dirpath) / f for f in filenames if f.endswith(".py"))
    return sorted(found)


def _file_prompts(root: Path, path: Path) -> list[PromptItem]:
    try:
        with tokenize.open(path) as fh:  # honours the file's coding declaration
            source = fh.read()
        tree = ast.parse(source, filename=str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return []  # a few stdlib files are templates or target another Python
    module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
    lines = source.splitlines()
    items = []
    for qualname, node in _functions(tree):
        text = _prompt_text(lines, node)
        if text is not None:
            items.append(PromptItem(f"stdlib/{module}.{qualname}", "stdlib", text))
    return items


def _functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            found.extend(
                (f"{node.name}.{item.name}", item)
                for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            )
    return found


def _prompt_text(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    doc = ast.get_docstring(node)
    if doc is None or not DOCSTRING_CHARS[0] <= len(doc) <= DOCSTRING_CHARS[1]:
        return None
    docstring = node.body[0]
    # Stubs (docstring only) teach nothing, and a docstring on the def line leaves no room for a body.
    if len(node.body) < 2 or docstring.lineno == node.lineno or docstring.end_lineno is None:
        return None
    # The def line(s) and docstring exactly as written, shifted left so methods read like functions.
    block = lines[node.lineno - 1 : docstring.end_lineno]
    if block[-1].encode("utf-8")[docstring.end_col_offset :].strip():  # offsets count bytes
        return None  # something follows the docstring on its last line
    return "\n".join(_unindent(line, node.col_offset) for line in block) + "\n"


def _unindent(line: str, columns: int) -> str:
    head = line[:columns]
    return line[columns:] if not head.strip() else line.lstrip()

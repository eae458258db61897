"""Offline prompt sources: HumanEval minus the benchmark's, stdlib signatures + docstrings, conversations."""
from __future__ import annotations

import ast
import json
import textwrap

import pytest

from specops.bench.conversations import DataFileError
from specops.bench.prompts import load_prompts
from specops.draft.prompt_sources import PromptItem, conversation_prompts, humaneval_prompts, stdlib_prompts

DOC = "Return the thing that this function computes, carefully and well."


def test_humaneval_skips_the_benchmark_prompts_and_keeps_indices():
    everything = load_prompts("humaneval", limit=None)
    items = humaneval_prompts(skip=80)
    assert len(items) == len(everything) - 80
    assert items[0] == PromptItem("humaneval/80", "humaneval", everything[80])
    assert items[-1].id == f"humaneval/{len(everything) - 1}"
    assert [i.id for i in humaneval_prompts()][:2] == ["humaneval/0", "humaneval/1"]
    assert humaneval_prompts(skip=10_000) == []
    with pytest.raises(ValueError, match="skip"):
        humaneval_prompts(skip=-1)


def test_stdlib_prompts_are_deterministic_and_unique():
    items = stdlib_prompts(160, seed=0)
    assert len(items) == 160
    assert len({i.id for i in items}) == 160 and len({i.text for i in items}) == 160
    assert stdlib_prompts(160, seed=0) == items
    assert stdlib_prompts(160, seed=1) != items
    assert stdlib_prompts(20, seed=0) == items[:20]  # a smaller sample is a prefix of a larger one
    # Spread over many modules, not one big file.
    assert len({i.id.rsplit(".", 1)[0] for i in items}) > 30


def test_stdlib_prompts_are_a_def_and_its_docstring_ending_in_a_newline():
    for item in stdlib_prompts(60, seed=3):
        assert item.source == "stdlib" and item.id.startswith("stdlib/")
        assert item.text.endswith("\n")
        assert item.text.startswith(("def ", "async def "))
        assert not any(part in {"test", "idlelib", "lib2to3"} for part in item.id.split("."))
        # Adding a body makes it a complete function whose docstring is a reasonable length.
        func = ast.parse(item.text + "    pass\n").body[0]
        assert isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
        assert item.id.endswith("." + func.name)
        assert 40 <= len(ast.get_docstring(func)) <= 1200
        assert len(func.body) == 2  # docstring, then our pass: nothing of the real body leaked


def test_stdlib_prompts_from_a_small_tree(tmp_path):
    lib = tmp_path / "lib"
    (lib / "pkg").mkdir(parents=True)
    (lib / "test").mkdir()
    (lib / "pkg" / "__init__.py").write_text(textwrap.dedent(f'''
        def top(a: int,
                b: str = "x") -> str:
            """{DOC}"""
            return b * a

        def short():
            """Too short."""
            return 1

        def stub():
            """{DOC} A stub."""

        class Thing:
            @property
            def size(self):  # a comment stays
                """
                {DOC}
                """
                return 3
    '''))
    (lib / "test" / "test_x.py").write_text(f'def test_it():\n    """{DOC}"""\n    return 1\n')
    (lib / "broken.py").write_text("def (:\n")
    items = {i.id: i.text for i in stdlib_prompts(10, seed=0, stdlib=lib)}
    assert sorted(items) == ["stdlib/pkg.Thing.size", "stdlib/pkg.top"]
    assert items["stdlib/pkg.top"] == f'def top(a: int,\n        b: str = "x") -> str:\n    """{DOC}"""\n'
    assert items["stdlib/pkg.Thing.size"] == f'def size(self):  # a comment stays\n    """\n    {DOC}\n    """\n'


def test_conversation_prompts_take_the_first_user_turn(tmp_path):
    path = tmp_path / "c.jsonl"
    records = [
        {"conversation_id": "a", "conversations": [{"from": "System", "value": "S"}, {"from": "User", "value": "Q1"},
                                                    {"from": "Assistant", "value": "A1"},
                                                    {"from": "User", "value": "Q2"}]},
        {"messages": [{"role": "user", "content": "Hello"}]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert conversation_prompts(path) == [
        PromptItem("conversations/a", "conversations", "Q1"),
        PromptItem("conversations/line2", "conversations", "Hello"),
    ]


def test_conversation_prompts_without_user_turns_are_an_error(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "assistant", "content": "x"}]}) + "\n")
    with pytest.raises(DataFileError, match="no conversation has a non-empty user turn"):
        conversation_prompts(path)

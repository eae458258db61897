"""cli/main.py: the parser it builds from the subcommand modules."""
from __future__ import annotations

import argparse

import pytest

from cli.main import _parser


def _commands(argv: list[str]) -> dict[str, argparse.ArgumentParser]:
    (sub,) = [action for action in _parser(argv)._actions if isinstance(action, argparse._SubParsersAction)]
    return sub.choices


def test_every_subcommand_comes_with_its_handler():
    commands = _commands([])
    assert len(commands) == 18 and all(callable(p.get_default("handler")) for p in commands.values())


@pytest.mark.parametrize("name", sorted(_commands([])))
def test_a_named_command_gets_its_own_parser_and_no_more_than_it_needs(name):
    commands = _commands(["--debug", name, "--help"])
    assert name in commands and commands[name].get_default("handler") is _commands([])[name].get_default("handler")
    if name == "run":  # the first module registers it: a run builds nothing else
        assert "history" not in commands


def test_a_typo_still_lists_every_command():
    assert len(_commands(["rnu"])) == 18

"""cli/main.py: the parser it builds from the subcommand modules."""
from __future__ import annotations

import argparse

from cli.main import _parser


def test_every_subcommand_comes_with_its_handler():
    (sub,) = [action for action in _parser()._actions if isinstance(action, argparse._SubParsersAction)]
    assert len(sub.choices) == 17 and all(callable(p.get_default("handler")) for p in sub.choices.values())

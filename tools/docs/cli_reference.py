"""The CLI reference: every subcommand of `specops` and every flag, read from the argparse parser `cli/main.py`
builds (all of its commands, as `specops --help` lists them), nested subcommands (`results import`) included."""
from __future__ import annotations

import argparse

from tools.docs.text import cell, generated_note, table


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help, parser) of each subcommand, in the order --help lists them."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            found += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return found


def _flag(action: argparse.Action) -> str:
    names = ", ".join(f"`{n}`" for n in action.option_strings) or f"`{action.metavar or action.dest}`"
    takes = action.nargs != 0 and action.option_strings
    metavar = action.metavar or (action.dest.upper() if takes else None)
    return names + (f" `{metavar}`" if takes and metavar else "")


def _default(action: argparse.Action) -> str:
    if not action.option_strings:  # a positional: argparse calls one of nargs '*' required, though none may be given
        return "optional" if action.nargs in ("?", "*") else "required"
    if action.default in (None, argparse.SUPPRESS, [], False):
        return "required" if action.required else "-"
    value = ",".join(map(str, action.default)) if isinstance(action.default, list) else action.default
    return f"`{value}`"


def _rows(parser: argparse.ArgumentParser) -> list[list[object]]:
    rows = []
    for action in parser._actions:
        hidden = action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction)
        if hidden or isinstance(action, argparse._SubParsersAction):
            continue
        about = action.help or ""
        if action.choices:
            about += (" " if about else "") + "(one of: " + ", ".join(map(str, action.choices)) + ")"
        rows.append([_flag(action), _default(action), cell(about) or "-"])
    return rows


def _command(path: str, about: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    usage = " ".join(parser.format_usage().split())  # argparse wraps at the terminal's width
    anchor = path.replace(" ", "-")
    lines = [f"{'#' * level} `{path}` {{#{anchor}}}", "", cell(about), "", "```", usage, "```", ""]
    rows = _rows(parser)
    if rows:
        lines += table(["argument", "default", "meaning"], rows) + [""]
    for name, sub_about, sub in _subcommands(parser):
        lines += _command(f"{path} {name}", sub_about, sub, level + 1)
    return lines


def page(parser: argparse.ArgumentParser) -> str:
    lines = ["# Command line", "", generated_note("the argparse parser of `cli/` (`cli/main.py` and the modules of "
                                                  "its `COMMANDS`)"),
             cell(parser.description or ""), "", "Every command also takes `--debug` (tracebacks on the console). "
             "What each exit status means: [exit codes](exit-codes.md).", ""]
    lines += ["| command | what it does |", "|---|---|"]
    lines += [f"| [`{name}`](#specops-{name}) | {cell(about)} |" for name, about, _ in _subcommands(parser)] + [""]
    for name, about, sub in _subcommands(parser):
        lines += _command(f"specops {name}", about, sub, 2)
    return "\n".join(lines)

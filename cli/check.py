"""`specops check PROFILE`: can this host run the profile's engine and benchmark tool? One line either way.

`make demo` asks it before choosing the engine: vLLM's CPU build where it can start, else the embedded runtime,
saying why in that one line. It runs the engine and tool preflight `specops run` runs (the venvs, the pinned
versions, the preloaded libraries, the CPU's instruction sets), and starts nothing.
"""
from __future__ import annotations

import sys

from cli.common import EXIT_PREREQUISITES


def add_parser(sub) -> None:
    check = sub.add_parser("check", help="can this host run the profile's engine and benchmark tool? (starts "
                           "nothing; exit 4 with the reasons in one line when it cannot)")
    check.add_argument("profile", help="profile name (profiles/<name>.yaml) or a YAML path")
    check.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="override a profile field (repeatable)")
    check.set_defaults(handler=cmd_check)


def cmd_check(args) -> int:
    from specops.pipeline.backend import backend_for, preflight, tool_for
    from specops.profile.loader import load_profile

    loaded = load_profile(args.profile, args.overrides)
    problems = preflight(backend_for(loaded.profile), tool_for(loaded.profile))
    if problems:
        print("; ".join(problems), file=sys.stderr)
        return EXIT_PREREQUISITES
    print(f"{loaded.profile.name}: this host can run its engine and benchmark tool")
    return 0

"""specops command line: run, plan, profiles, history, compare, sweep, compare-profiles, upgrade-check, calibrate,
results, schema, deployments, janitor, settings, serve-artifacts, alert, replay."""
from __future__ import annotations

import argparse
import os
import sys
import traceback

from cli import alert, deployments, flow_commands, history, host, replay, run
from cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_PIPE_CLOSED, EXIT_PREREQUISITES, EXIT_PROFILE
from specops.backends.base import PrerequisiteError
from specops.profile.errors import ProfileError

# Each module registers its subcommands with their handlers; in this order `specops --help` lists them.
COMMANDS = (run, history, flow_commands, deployments, host, alert, replay)


def _parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser of the command argv names (the modules are asked in order until one has registered it: a run
    builds its own parser only), else of every command (`specops --help`, a typo: argparse lists them all)."""
    parser = argparse.ArgumentParser(prog="specops", description=__doc__)
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks (on the console too, for a run's failed steps)")
    sub = parser.add_subparsers(dest="command", required=True)
    named = next((a for a in argv if not a.startswith("-")), None)
    for module in COMMANDS:
        module.add_parser(sub)
        if named in sub.choices:
            break
    for command in sub.choices.values():  # also after the command: `specops run X --debug`
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    from specops.atomic_file import RunFileError
    from specops.replay.traffic import TrafficFileError
    from specops.results.durable import ManifestError
    from specops.results.store import AmbiguousRun, ResultsError, RunNotFound
    from specops.run.rundir import RunDirError
    from specops.settings import SettingsError

    argv = sys.argv[1:] if argv is None else argv
    try:
        parser = _parser(argv)  # a flow's subcommand offers its form's choices: the shipped profiles, read here
    except SettingsError as err:
        print(f"specops: {err}", file=sys.stderr)
        return EXIT_PREREQUISITES
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (ProfileError, RunDirError, ManifestError, TrafficFileError) as err:
        return _failed(args, err, EXIT_PROFILE)
    except PrerequisiteError as err:
        return _failed(args, err, EXIT_PREREQUISITES)
    except (RunNotFound, AmbiguousRun) as err:  # a run id that names no run, or several: what was typed
        return _failed(args, err, EXIT_PROFILE)
    except (ResultsError, SettingsError) as err:  # the database and the variables are this machine's environment
        return _failed(args, err, EXIT_PREREQUISITES)
    except RunFileError as err:  # a full disk: the file named, one line
        return _failed(args, err, EXIT_FAILED)
    except KeyboardInterrupt:
        print("specops: interrupted; servers were stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `specops plan X | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        return EXIT_PIPE_CLOSED
    except Exception as err:  # a bug, or a failure nobody foresaw: still one line, unless --debug
        if args.debug:
            raise
        print(f"specops: unexpected {type(err).__name__}: {err} (run again with --debug for the traceback)",
              file=sys.stderr)
        return EXIT_FAILED


def _failed(args, err: Exception, code: int) -> int:
    if args.debug:
        traceback.print_exception(err)
    print(f"specops: {err}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())

"""specops command line: run, plan, profiles, schema, janitor."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from specops.backends.base import PrerequisiteError
from specops.profile.errors import ProfileError


def _profile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile", help="profile name (profiles/<name>.yaml) or a YAML path")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a profile field, e.g. --set benchmark.num_requests=32 (repeatable)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specops", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a profile end to end (Prefect flow `specdec`)")
    _profile_args(run)
    run.add_argument("--run-id", help="name of the run directory (default: timestamp)")
    plan = sub.add_parser("plan", help="print the steps, commands and rendered files; start nothing")
    _profile_args(plan)
    sub.add_parser("profiles", help="list profiles and the method x backend matrix")
    schema = sub.add_parser("schema", help="print the profile JSON schema")
    schema.add_argument("-o", "--output", type=Path)
    sub.add_parser("janitor", help="stop servers that killed runs left behind")
    return parser


def prefect_defaults() -> None:
    """Settings for running flows without a Prefect server (an ephemeral one is started)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # A fresh PREFECT_HOME migrates its SQLite database first: on 2 busy cores that outlasts
    # the 20 s default and the run dies before it starts.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")


def _terminate_as_interrupt(signum, frame):  # so `finally` teardown runs on SIGTERM too
    raise KeyboardInterrupt(f"signal {signum}")


def cmd_run(args) -> int:
    from specops.profile.loader import load_profile

    from specops.backends.base import load_backend

    loaded = load_profile(args.profile, args.overrides)  # fail fast, before Prefect starts
    problems = load_backend(loaded.profile).preflight()
    if problems:
        raise PrerequisiteError(loaded.profile.name, problems)
    prefect_defaults()
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    from flows.specdec import specdec

    start = time.monotonic()
    report = specdec(args.profile, args.overrides, args.run_id)
    total = time.monotonic() - start
    measured = sum(report.phase_s.values())
    print(f"\nreport: {report.report_md}\n{report.summary()}")
    print(f"orchestration overhead: {total - measured:.1f}s of specops run's {total:.1f}s "
          f"(Prefect start-up, validation, download, render, report; serve+check+benchmark took {measured:.1f}s)")
    return 0 if report.status != "INVALID" else 3


def cmd_plan(args) -> int:
    from specops.plan import format_plan
    from specops.profile.loader import load_profile

    print(format_plan(load_profile(args.profile, args.overrides)))
    return 0


def cmd_profiles(args) -> int:
    from specops.catalog import format_catalog

    print(format_catalog())
    return 0


def cmd_schema(args) -> int:
    from specops.profile.schema import Profile

    text = json.dumps(Profile.model_json_schema(), indent=2) + "\n"
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_janitor(args) -> int:
    from specops import janitor

    print(f"stopped {janitor.reap()} leftover server(s)")
    return 0


COMMANDS = {"run": cmd_run, "plan": cmd_plan, "profiles": cmd_profiles, "schema": cmd_schema,
            "janitor": cmd_janitor}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ProfileError as err:
        print(f"specops: {err}", file=sys.stderr)
        return 2
    except PrerequisiteError as err:
        print(f"specops: {err}", file=sys.stderr)
        return 4
    except KeyboardInterrupt:
        print("specops: interrupted; servers were stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

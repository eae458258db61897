"""What several subcommands share: the exit codes, the profile arguments, argument types, Prefect's settings."""
from __future__ import annotations

import argparse
import os

EXIT_PROFILE, EXIT_FAILED, EXIT_INVALID, EXIT_PREREQUISITES, EXIT_INTERRUPTED = 2, 1, 3, 4, 130


def profile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile", help="profile name (profiles/<name>.yaml) or a YAML path")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a profile field, e.g. --set benchmark.num_requests=32 (repeatable)")


# argparse names a type function in the error when it raises ValueError (int('²') does): these names are shown.
def _int_list(text: str) -> list[int]:
    items = [v.strip() for v in text.split(",")]
    if not all(item.isdigit() and int(item) > 0 for item in items):
        raise argparse.ArgumentTypeError(f"{text!r}: give positive whole numbers separated by commas, e.g. 1,2,4")
    return [int(item) for item in items]


def _positive(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of 1 or more")
    return int(text)


def prefect_defaults() -> None:
    """Settings for running flows without a Prefect server (an ephemeral one is started)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # A fresh PREFECT_HOME migrates its SQLite database first: on 2 busy cores that outlasts
    # the 20 s default and the run dies before it starts.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")


def terminate_as_interrupt(signum, frame):  # so `finally` teardown runs on SIGTERM too
    raise KeyboardInterrupt(f"signal {signum}")

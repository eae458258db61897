"""What several subcommands share: the exit codes (one table, with what each means), the profile arguments,
argument types, Prefect's settings, and the console of `specops run`: Prefect's log lines without their tracebacks.

Prefect logs a failed task and then its failed flow with exc_info, so one error prints as two stacked tracebacks
above the one-line message `specops run` ends with. Only the console handlers are changed, and only in how they
format: the records themselves (and so the API handler, the Prefect UI and the run's logs) keep their tracebacks.
`--debug` leaves this off.
"""
from __future__ import annotations

import argparse
import copy
import logging
from collections.abc import Sequence
from typing import Any, get_args, get_origin

# Every exit status a command ends with, and what it means: the one table the commands return from (by name, below)
# and the docs' reference prints.
EXIT_CODES: dict[str, tuple[int, str]] = {
    "ok": (0, "done; for `specops run`, a valid run (the speculative outputs match the base's) or one with nothing "
              "to check against (`comparison.baseline: false`)"),
    "failed": (1, "a step failed (one line names the step and the error; the Prefect UI and `--debug` keep the "
                  "traceback), an error nobody foresaw, or a disk that filled (the file that did not fit named)"),
    "bad input": (2, "what was typed or given is wrong, found before anything starts: the profile file, an include, "
                     "a duplicate key, a field's type or range, the prompts file, `--run-id`, a local target without "
                     "`config.json` or a tokenizer, a run id `compare` cannot find, profiles `compare-profiles` "
                     "cannot put side by side, a `--k` / `--concurrency` / `-n` that is not a positive whole number, "
                     "a sweep of more than `--max-cells` cells, a traffic log that cannot be read, a usage error"),
    "invalid": (3, "INVALID: the speculative outputs differ from the base's (the lossless check failed)"),
    "prerequisites": (4, "this machine lacks what the run needs: the backend's or the benchmark tool's "
                         "prerequisites, a writable `SPECOPS_ARTIFACTS` / `SPECOPS_CACHE` with `SPECOPS_MIN_FREE_MB` "
                         "free, a writable `SPECOPS_LOCK_DIR`, an environment variable that parses, a results "
                         "database that takes a row, a `PREFECT_API_URL` that answers (or a private Prefect server "
                         "that starts), the hub for an `hf://` model not yet cached"),
    "interrupted": (130, "interrupted (Ctrl-C, SIGTERM); the servers were stopped"),
    # 128 + SIGPIPE, as `git log | head` ends
    "pipe closed": (141, "the reader of the output stopped early (`specops plan X | head`); nothing failed"),
}
EXIT_PROFILE, EXIT_FAILED, EXIT_INVALID = EXIT_CODES["bad input"][0], EXIT_CODES["failed"][0], EXIT_CODES["invalid"][0]
EXIT_PREREQUISITES, EXIT_INTERRUPTED = EXIT_CODES["prerequisites"][0], EXIT_CODES["interrupted"][0]
EXIT_PIPE_CLOSED = EXIT_CODES["pipe closed"][0]


def add_flow_inputs(parser: argparse.ArgumentParser, inputs: dict[str, Any]) -> None:
    """A flow's inputs (prefect_adapters/parameters.py) as the subcommand's arguments: each under its Flag, with
    the description the deployment's form shows as its help, its bounds checked as the form checks them, the
    flow's default as its own; the argument's dest is the flow's parameter."""
    from prefect_adapters.parameters import input_parts  # it reads the shipped profiles: only for these commands
    from specops.fields import bounds

    for dest, annotated in inputs.items():
        base, flag, field = input_parts(annotated)
        text = field.description.replace("%", "%%")
        if flag.name is None:
            parser.add_argument(dest, metavar=flag.metavar, help=text)
        elif base is bool:
            action = argparse.BooleanOptionalAction if flag.default else "store_true"
            parser.add_argument(flag.name, dest=dest, action=action, default=flag.default, help=text)
        elif base is int:
            parser.add_argument(flag.name, dest=dest, type=_whole(*bounds(field)), default=flag.default,
                                metavar=flag.metavar, help=f"{text} (default: {flag.default})")
        elif get_origin(base) is Sequence and get_args(base)[0] is str:  # a repeated key=value
            parser.add_argument(flag.name, dest=dest, action="append", default=list(flag.default),
                                metavar=flag.metavar, help=f"{text} Repeatable.")
        elif get_origin(base) is Sequence:  # whole numbers, comma-separated
            item = get_args(get_args(base)[0])[1]
            shown = ",".join(map(str, flag.default)) or "none"
            parser.add_argument(flag.name, dest=dest, type=_int_list_within(*bounds(item)),
                                default=list(flag.default), metavar=flag.metavar, help=f"{text} (default: {shown})")
        else:
            parser.add_argument(flag.name, dest=dest, default=flag.default, metavar=flag.metavar, help=text)


def profile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile", help="profile name (profiles/<name>.yaml) or a YAML path")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a profile field, e.g. --set benchmark.num_requests=32 (repeatable)")


# argparse names a type function in the error when it raises ValueError (int('²') does): these names are shown.
def _int_list_within(low: int, high: int):
    """Comma-separated whole numbers, each from low to high (the form's bounds)."""
    def whole_numbers(text: str) -> list[int]:
        items = [v.strip() for v in text.split(",")]
        if not all(item.isdigit() and int(item) > 0 for item in items):
            raise argparse.ArgumentTypeError(f"{text!r}: give positive whole numbers separated by commas, e.g. 1,2,4")
        values = [int(item) for item in items]
        if bad := [v for v in values if not low <= v <= high]:
            raise argparse.ArgumentTypeError(f"{bad}: takes {low} to {high}")
        return values
    return whole_numbers


def _whole(low: int, high: int):
    """One whole number from low to high (the form's bounds)."""
    def whole_number(text: str) -> int:
        if not text.strip().isdigit() or not low <= int(text) <= high:
            raise argparse.ArgumentTypeError(f"{text!r}: give a whole number from {low} to {high}")
        return int(text)
    return whole_number


def _positive(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of 1 or more")
    return int(text)


def terminate_as_interrupt(signum, frame):  # so `finally` teardown runs on SIGTERM too
    raise KeyboardInterrupt(f"signal {signum}")


class WithoutTraceback(logging.Formatter):
    """Formats as `inner` does, minus exc_info, exc_text and stack_info."""

    def __init__(self, inner: logging.Formatter | None):
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            record = copy.copy(record)  # the other handlers still see the traceback
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return self.inner.format(record)


def drop_console_tracebacks() -> int:
    """Wrap the formatter of every console handler on the root and `prefect*` loggers; return how many.

    Prefect's API handlers are not stream handlers, so they are left alone."""
    loggers = [logging.getLogger()] + [logger for name, logger in logging.Logger.manager.loggerDict.items()
                                       if name.startswith("prefect") and isinstance(logger, logging.Logger)]
    wrapped = 0
    for handler in (h for logger in loggers for h in logger.handlers):
        console = isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
        if console and not isinstance(handler.formatter, WithoutTraceback):
            handler.setFormatter(WithoutTraceback(handler.formatter))
            wrapped += 1
    return wrapped

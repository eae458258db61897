"""`specops run`: a profile end to end (Prefect flow `specdec`); `plan`: what it would do; `profiles`: which exist."""
from __future__ import annotations

import signal
import sys
import time
import traceback
from pathlib import Path

from cli.common import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_PREREQUISITES,
    drop_console_tracebacks,
    profile_args,
    terminate_as_interrupt,
)
from prefect_adapters.ephemeral import prefect_defaults
from specops.backends.base import PrerequisiteError


def add_parser(sub) -> None:
    run = sub.add_parser("run", help="run a profile end to end (Prefect flow `specdec`)")
    profile_args(run)
    run.add_argument("--run-id", help="name of the run directory (default: timestamp)")
    run.set_defaults(handler=cmd_run)
    plan = sub.add_parser("plan", help="print the steps, commands and rendered files; start nothing")
    profile_args(plan)
    plan.set_defaults(handler=cmd_plan)
    sub.add_parser("profiles", help="list profiles and the method x backend matrix").set_defaults(handler=cmd_profiles)


def cmd_run(args) -> int:
    from cli.preflight import check_host, check_local_target, check_run_id, environment_problems
    from specops.pipeline.backend import backend_for, preflight, tool_for
    from specops.profile.loader import load_profile

    loaded = load_profile(args.profile, args.overrides)  # fail fast, before Prefect starts; the flow takes this load
    check_run_id(loaded.profile.name, args.run_id)
    check_host(loaded)
    check_local_target(loaded)
    if problems := environment_problems(loaded) + preflight(backend_for(loaded.profile), tool_for(loaded.profile)):
        raise PrerequisiteError(loaded.profile.name, problems)
    prefect_defaults()
    signal.signal(signal.SIGTERM, terminate_as_interrupt)
    from cli.prefect_api import PrefectApiError, prefect_api, start_prefect_api

    start = time.monotonic()  # Prefect's API server start-up counts as orchestration overhead
    api = start_prefect_api()  # before the flow's imports, which its own then overlap
    from flows.specdec import RunFailed, run_specdec
    from prefect_adapters.refusal import handed_over
    from specops.report.costs import command_text
    from specops.report.writer import summary
    from specops.results.durable import is_unrecorded

    if not getattr(args, "debug", False):  # the step and the error end the run in one line; the UI keeps tracebacks
        drop_console_tracebacks()

    try:
        # a private API unless PREFECT_API_URL is set
        with prefect_api(api), handed_over((args.profile, args.overrides, loaded)):
            result = run_specdec(args.profile, args.overrides, args.run_id)  # INVALID: Failed, still reported
    except RunFailed as failed:
        if getattr(args, "debug", False):
            traceback.print_exception(failed)
        print(f"\nspecops: {failed}", file=sys.stderr)
        return EXIT_FAILED
    except PrefectApiError as err:  # this machine could not run Prefect's API server: an environment problem
        print(f"specops: {err}", file=sys.stderr)
        return EXIT_PREREQUISITES
    total = time.monotonic() - start
    print(f"\nreport: {Path(result.run_dir) / 'report.md'}\n{summary(result)}")
    if is_unrecorded(result.uid):
        print(f"specops: warning: the results database did not take this run's result; it is kept in "
              f"{Path(result.run_dir) / 'manifest.json'}: `specops results import {result.run_dir}` records it, "
              "or the next run does", file=sys.stderr)
    print(command_text("specops run", total, result))  # its parts, the queue and the overhead add up to it
    return EXIT_INVALID if result.status.value == "invalid" else 0


def cmd_plan(args) -> int:
    from specops.pipeline.plan import format_plan
    from specops.profile.loader import load_profile

    print(format_plan(load_profile(args.profile, args.overrides)))
    return 0


def cmd_profiles(args) -> int:
    from specops.profile.catalog import format_catalog

    print(format_catalog())
    return 0

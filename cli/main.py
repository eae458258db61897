"""specops command line: run, plan, profiles, history, compare, sweep, compare-profiles, upgrade-check, calibrate,
results, schema, deployments, janitor, settings, serve-artifacts, alert."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from specops.backends.base import PrerequisiteError
from specops.profile.errors import ProfileError

EXIT_PROFILE, EXIT_FAILED, EXIT_INVALID, EXIT_PREREQUISITES, EXIT_INTERRUPTED = 2, 1, 3, 4, 130
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE, as `git log | head` ends: the reader stopped, nothing failed
MAX_SWEEP_CELLS = 64


def _profile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile", help="profile name (profiles/<name>.yaml) or a YAML path")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a profile field, e.g. --set benchmark.num_requests=32 (repeatable)")


def _parser() -> argparse.ArgumentParser:
    from specops.run.rundir import ROOT_VARIABLES

    parser = argparse.ArgumentParser(prog="specops", description=__doc__)
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks (on the console too, for a run's failed steps)")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a profile end to end (Prefect flow `specdec`)")
    _profile_args(run)
    run.add_argument("--run-id", help="name of the run directory (default: timestamp)")
    plan = sub.add_parser("plan", help="print the steps, commands and rendered files; start nothing")
    _profile_args(plan)
    sub.add_parser("profiles", help="list profiles and the method x backend matrix")
    history = sub.add_parser("history", help="runs in the results database, newest first")
    history.add_argument("profile", nargs="?", help="only this profile's runs")
    history.add_argument("-n", "--limit", type=_positive, help="runs read (default 30; with --trend 500)")
    history.add_argument("--trend", action="store_true", help="write each profile's trend report (HTML + PNG) "
                         "under artifacts/trends/ and print the newest run's regression verdicts")
    compare = sub.add_parser("compare", help="two runs side by side (run id, uid or uid prefix)")
    compare.add_argument("runs", nargs=2, metavar="RUN")
    sweep = sub.add_parser("sweep", help="a profile over draft length x concurrency (Prefect flow `sweep`): the "
                           "table, where speculation stops paying, the best draft length per concurrency")
    _profile_args(sweep)
    sweep.add_argument("--k", type=_int_list, default=[1, 2, 4], metavar="K,K,...",
                       help="draft lengths (method.num_speculative_tokens), default 1,2,4")
    sweep.add_argument("--concurrency", type=_int_list, default=[1, 2, 4], metavar="C,C,...",
                       help="benchmark.concurrency values, default 1,2,4")
    sweep.add_argument("--run-id", help="name of the sweep's run directory (default: timestamp)")
    sweep.add_argument("--max-cells", type=_positive, default=MAX_SWEEP_CELLS, metavar="N",
                       help=f"refuse a grid of more cells than this (default {MAX_SWEEP_CELLS}): each cell is a "
                       "benchmark of its own")
    versus = sub.add_parser("compare-profiles", help="several profiles on one target, run one after another, in "
                            "one table (Prefect flow `compare`)")
    versus.add_argument("profiles", nargs="+", metavar="PROFILE")
    versus.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="an override for every profile (repeatable)")
    upgrade = sub.add_parser("upgrade-check", help="one profile on two engine versions, one after the other "
                             "(Prefect flow `upgrade`): the version facts that differ, speedup, acceptance per "
                             "draft position and cost side by side")
    _profile_args(upgrade)
    for side, example in (("before", "backend.image=nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3"),
                          ("after", "backend.image=nvcr.io/nvidia/tritonserver:25.04-vllm-python-py3")):
        upgrade.add_argument(f"--{side}", action="append", default=[], metavar="BACKEND.KEY=VALUE",
                             help=f"a backend override of the {side} side, e.g. {example}, or 'backend={{kind: "
                             "local}' (repeatable; none: the profile as shipped)")
    upgrade.add_argument("--run-id", help="name of the check's directory under artifacts/upgrade/<profile>/")
    calibrate = sub.add_parser("calibrate", help="the profile's base against itself, RUNS times (Prefect flow "
                               "`calibrate`): how many intervals contain 1.00x, and the false speedups' spread")
    _profile_args(calibrate)
    calibrate.add_argument("--runs", type=int, default=20, help="A/A runs (default 20: about 19 intervals of "
                           "20 should contain 1.00x)")
    calibrate.add_argument("--run-id", help="name of the calibration's directory under artifacts/calibrate/<profile>/")
    results = sub.add_parser("results", help="the results database: `results import` records results kept in run "
                             "directories (a run whose database was unreachable at its end)")
    results_sub = results.add_subparsers(dest="results_command", required=True)
    importing = results_sub.add_parser("import", help="append the results kept in run directories (their "
                                       "manifest.json) to the results database; without RUN_DIR, those "
                                       "earlier runs could not record")
    importing.add_argument("run_dirs", nargs="*", type=Path, metavar="RUN_DIR",
                           help="a run's directory, or one holding several (a sweep's, a profile's)")
    importing.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    schema = sub.add_parser("schema", help="print the profile JSON schema")
    schema.add_argument("-o", "--output", type=Path)
    deployments = sub.add_parser("deployments", help="write prefect.yaml from the profiles (or a work pool's "
                                 "base job template)")
    deployments.add_argument("-o", "--output", type=Path)
    deployments.add_argument("--pool-template", metavar="POOL", help="print POOL's base job template instead "
                             "(for `prefect work-pool create/update --base-job-template`)")
    deployments.add_argument("--pool-description", metavar="POOL", help="print POOL's description instead (the "
                             "worker command and the blocks its runs need; for `prefect work-pool update "
                             "--description`)")
    janitor = sub.add_parser("janitor", help="stop what killed runs left behind (servers, benchmark tools, ...)")
    janitor.add_argument("--all", action="store_true",
                         help="also what live runs started (everything recorded; the Prefect API is not asked)")
    settings = sub.add_parser("settings", help="the environment variables specops reads: default and meaning "
                              "(Markdown)")
    settings.add_argument("--get", metavar="VARIABLE", choices=ROOT_VARIABLES,
                          help="print the path in effect for VARIABLE instead, its default resolved (the Makefile "
                          "reads the cache `make up`'s worker shares with this host's runs so)")
    serve = sub.add_parser("serve-artifacts", help="serve the artifacts root read-only over HTTP (the Prefect UI's "
                           "plots and links) and take alerts at POST /alerts; `make up` starts it")
    serve.add_argument("--root", type=Path, required=True, help="the directory to serve (SPECOPS_ARTIFACTS)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=4201, help="port to bind (default 4201)")
    from cli.alert import add_parser as add_alert_parser
    from cli.check import add_parser as add_check_parser

    add_alert_parser(sub)
    add_check_parser(sub)
    for command in sub.choices.values():  # also after the command: `specops run X --debug`
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


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


def _terminate_as_interrupt(signum, frame):  # so `finally` teardown runs on SIGTERM too
    raise KeyboardInterrupt(f"signal {signum}")


def cmd_run(args) -> int:
    from cli.preflight import check_host, check_local_target, check_run_id, environment_problems
    from specops.pipeline.backend import backend_for, preflight, tool_for
    from specops.profile.loader import load_profile

    loaded = load_profile(args.profile, args.overrides)  # fail fast, before Prefect starts
    check_run_id(loaded.profile.name, args.run_id)
    check_host(loaded)
    check_local_target(loaded)
    problems = environment_problems(loaded) + preflight(backend_for(loaded.profile), tool_for(loaded.profile))
    if problems:
        raise PrerequisiteError(loaded.profile.name, problems)
    prefect_defaults()
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    from cli.prefect_api import PrefectApiError, prefect_api
    from flows.specdec import RunFailed, run_specdec
    from specops.report.writer import summary
    from specops.results.durable import is_unrecorded

    if not getattr(args, "debug", False):  # the step and the error end the run in one line; the UI keeps tracebacks
        from cli.console import drop_console_tracebacks

        drop_console_tracebacks()

    start = time.monotonic()  # Prefect's API server start-up counts as orchestration overhead
    try:
        with prefect_api():  # a private one, dying with this process, unless PREFECT_API_URL is set
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
    measured = result.phases.measured  # overlapping steps (servers starting side by side) counted once
    queued = result.waited_s  # for the slots, behind other runs: not orchestration
    print(f"\nreport: {Path(result.run_dir) / 'report.md'}\n{summary(result)}")
    if is_unrecorded(result.uid):
        print(f"specops: warning: the results database did not take this run's result; it is kept in "
              f"{Path(result.run_dir) / 'manifest.json'}: `specops results import {result.run_dir}` records it, "
              "or the next run does", file=sys.stderr)
    print(f"orchestration overhead: {total - measured - queued:.1f}s of specops run's {total:.1f}s "
          f"(Prefect start-up, validation, download, render, report; serve+check+benchmark took {measured:.1f}s"
          + (f"; waited {queued:.1f}s for {', '.join(result.window.slots)})" if queued >= 1 else ")"))
    return EXIT_INVALID if result.status.value == "invalid" else 0


def _flow_command(args, call):
    """Run a flow under a private Prefect API (unless PREFECT_API_URL is set), SIGTERM as an interrupt."""
    prefect_defaults()
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    from cli.prefect_api import prefect_api

    if not getattr(args, "debug", False):
        from cli.console import drop_console_tracebacks

        drop_console_tracebacks()
    with prefect_api():
        return call()


def cmd_sweep(args) -> int:
    from pydantic import ValidationError

    from specops.sweep.grid import SweepGrid, validate_grid

    try:
        grid = SweepGrid(draft_lengths=args.k, concurrencies=args.concurrency)
    except ValidationError as err:
        raise ProfileError("sweep grid", [(str(e["loc"][0]), e["msg"]) for e in err.errors()]) from None
    cells = len(grid.cells())
    if cells > args.max_cells:
        raise ProfileError("sweep grid", [("--k x --concurrency", f"{len(grid.draft_lengths)} draft lengths x "
                                           f"{len(grid.concurrencies)} concurrencies are {cells} cells, more than "
                                           f"--max-cells {args.max_cells}; narrow the grid, or raise --max-cells")])
    loaded = validate_grid(args.profile, args.overrides, grid)  # fail fast, before Prefect starts
    bench = loaded.profile.benchmark
    print(f"sweep of {loaded.profile.name}: {cells} cells ({len(grid.draft_lengths)} draft lengths x "
          f"{len(grid.concurrencies)} concurrencies), up to {len(grid.draft_lengths) + 1} servers, "
          f"{bench.num_requests} requests x {bench.rounds} round(s) per cell; cells measured before are reused",
          file=sys.stderr)
    from flows.sweep import sweep

    outcome = _flow_command(args, lambda: sweep(args.profile, grid.draft_lengths, grid.concurrencies,
                                                args.overrides, args.run_id))
    print(f"\n{outcome.table}\n\nsweep: {outcome.run_dir}  (measured now: {', '.join(outcome.measured) or 'none'}; "
          f"servers started: {dict(outcome.server_starts) or 'none'})")
    return 0


def cmd_compare_profiles(args) -> int:
    from specops.profile.comparison import check_comparable
    from specops.profile.loader import load_profile

    check_comparable([load_profile(p, args.overrides) for p in args.profiles])  # fail fast, before Prefect starts
    from flows.compare import compare

    print("\n" + _flow_command(args, lambda: compare(args.profiles, args.overrides)))
    return 0


def cmd_upgrade_check(args) -> int:
    from specops.upgrade.sides import load_sides

    load_sides(args.profile, args.before, args.after, args.overrides)  # fail fast, before Prefect starts
    from flows.upgrade import upgrade

    print("\n" + _flow_command(args, lambda: upgrade(args.profile, args.before, args.after, args.overrides,
                                                     args.run_id)))
    return 0


def cmd_calibrate(args) -> int:
    from specops.profile.calibration import load_calibration

    load_calibration(args.profile, args.overrides, args.runs)  # fail fast, before Prefect starts
    from flows.calibrate import calibrate

    print("\n" + _flow_command(args, lambda: calibrate(args.profile, args.runs, args.overrides, args.run_id)))
    return 0


def cmd_plan(args) -> int:
    from specops.pipeline.plan import format_plan
    from specops.profile.loader import load_profile

    print(format_plan(load_profile(args.profile, args.overrides)))
    return 0


def cmd_profiles(args) -> int:
    from specops.profile.catalog import format_catalog

    print(format_catalog())
    return 0


def cmd_history(args) -> int:
    from specops.regression.verdict import HISTORY_LIMIT
    from specops.results.compat import ReadNotes
    from specops.results.history import format_history
    from specops.results.store import ResultsStore

    notes = ReadNotes()
    with ResultsStore.open() as store:
        runs = store.history(args.profile, limit=args.limit or (HISTORY_LIMIT if args.trend else 30), notes=notes)
    _warn(notes)
    if not runs:
        print(f"no runs{' of ' + args.profile if args.profile else ''} in the results database")
        return 0
    print(_trends(runs) if args.trend else format_history(runs))
    return 0


def _trends(runs) -> str:
    """Each profile's trend report written; where, and its newest run's verdicts (default policy)."""
    from specops.regression.policy import RegressionPolicy
    from specops.regression.trend import trend_dir, write_trend
    from specops.regression.verdict import evaluate, profile_runs, verdict_table
    from specops.results.history import cpu_warning, with_warning

    policy, out = RegressionPolicy(), []
    for profile in sorted({run.profile for run in runs}):
        history = profile_runs([run for run in runs if run.profile == profile])
        if not history:
            continue
        html, png = write_trend(history, policy, trend_dir(profile))
        warning = cpu_warning([(run.run_id, run) for run in history])  # baselines keep to one CPU; the plot does not
        out.append(with_warning(warning, f"{profile}: {len(history)} runs\n  trend: {html}\n         {png}\n"
                                f"{verdict_table(evaluate(history, policy))}"))
    return "\n\n".join(out)


def cmd_compare(args) -> int:
    from specops.results.compat import ReadNotes
    from specops.results.history import format_compare
    from specops.results.store import ResultsStore

    notes = ReadNotes()
    with ResultsStore.open() as store:
        a, b = (store.get(ref, notes) for ref in args.runs)
    _warn(notes)
    print(format_compare(a, b))
    return 0


def _warn(notes) -> None:
    for line in notes.lines():
        print(f"specops: warning: {line}", file=sys.stderr)


def cmd_results_import(args) -> int:
    from specops.results import durable
    from specops.results.store import ResultsStore

    with ResultsStore.open() as store:
        done = (durable.import_results(store, args.run_dirs) if args.run_dirs
                else durable.import_unrecorded(store))
        where = store.url
    for imported in done:
        print(f"recorded {imported.result.profile} run {imported.result.run_id} ({imported.result.uid[:12]}, "
              f"{imported.result.verdict.value}) from {imported.run_dir}")
    what = "the given run directories" if args.run_dirs else "results earlier runs could not record"
    print(f"{len(done)} run(s) of {what} recorded in {where}" if done else f"nothing to record: no {what}")
    return 0


def cmd_schema(args) -> int:
    from specops.profile.schema import Profile

    text = json.dumps(Profile.model_json_schema(), indent=2) + "\n"
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_deployments(args) -> int:
    from cli.deployments import cmd_deployments as run

    return run(args)


def cmd_alert(args) -> int:
    from cli.alert import cmd_alert as run

    return run(args)


def cmd_check(args) -> int:
    from cli.check import cmd_check as run

    return run(args)


def cmd_settings(args) -> int:
    from specops.run.rundir import roots
    from specops.settings import table

    print(roots()[args.get] if args.get else "\n".join(table()))
    return 0


def cmd_serve_artifacts(args) -> int:
    from specops.fleet.artifacts_server import make_server

    def stop(signum, frame):  # serve_forever runs in this thread: leave it by raising, not shutdown()
        raise SystemExit(0)

    try:
        server = make_server(args.root, args.host, args.port)
    except OSError as err:  # the port taken, an address not this host's
        print(f"specops: serve-artifacts cannot listen on {args.host}:{args.port}: {err}", file=sys.stderr)
        return EXIT_FAILED
    signal.signal(signal.SIGTERM, stop)
    host, port = server.server_address[:2]
    print(f"serving {args.root.resolve()} read-only at http://{host}:{port}/ (alerts: POST /alerts)", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM through stop()
        pass
    finally:
        server.server_close()
    # Out at once: finalizing what this module imported (torch, through the backends) took 0.2-0.6 s, and
    # `make down` expects a stop within a second; every alert was written and closed when it came in.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def cmd_janitor(args) -> int:
    from specops.host import janitor

    runs = None
    if not args.all:  # a flow run the Prefect API calls running is left alone, whatever its process looks like here
        from prefect_adapters.reaping import ApiUnavailable, flow_runs_alive

        try:
            runs = flow_runs_alive(janitor.owners())
            print(f"janitor: the Prefect API knows {len(runs)} flow run(s) with records here, "
                  f"{sum(runs.values())} still running")
        except ApiUnavailable as err:
            print(f"janitor: {err}; a run counts as over when its specops process is gone")
    stopped = janitor.sweep(everything=args.all, runs=runs)
    print(janitor.summary(stopped, kept=0 if args.all else janitor.live_records(runs)))
    return 0


COMMANDS = {"run": cmd_run, "plan": cmd_plan, "profiles": cmd_profiles, "history": cmd_history,
            "compare": cmd_compare, "sweep": cmd_sweep, "compare-profiles": cmd_compare_profiles,
            "upgrade-check": cmd_upgrade_check,
            "calibrate": cmd_calibrate, "results": cmd_results_import,
            "schema": cmd_schema, "janitor": cmd_janitor, "deployments": cmd_deployments,
            "settings": cmd_settings, "serve-artifacts": cmd_serve_artifacts,
            "alert": cmd_alert, "check": cmd_check}


def main(argv: list[str] | None = None) -> int:
    from specops.atomic_file import RunFileError
    from specops.results.manifest import ManifestError
    from specops.results.store import AmbiguousRun, ResultsError, RunNotFound
    from specops.run.rundir import RunDirError

    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (ProfileError, RunDirError, ManifestError) as err:
        return _failed(args, err, EXIT_PROFILE)
    except PrerequisiteError as err:
        return _failed(args, err, EXIT_PREREQUISITES)
    except (RunNotFound, AmbiguousRun) as err:  # a run id that names no run, or several: what was typed
        return _failed(args, err, EXIT_PROFILE)
    except ResultsError as err:  # the database is this machine's environment, as the roots are
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

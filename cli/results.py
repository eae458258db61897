"""`specops results import`: the results runs kept in their directories, recorded in the results database."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub) -> None:
    results = sub.add_parser("results", help="the results database: `results import` records results kept in run "
                             "directories (a run whose database was unreachable at its end)")
    results_sub = results.add_subparsers(dest="results_command", required=True)
    importing = results_sub.add_parser("import", help="append the results kept in run directories (their "
                                       "manifest.json) to the results database; without RUN_DIR, those "
                                       "earlier runs could not record")
    importing.add_argument("run_dirs", nargs="*", type=Path, metavar="RUN_DIR",
                           help="a run's directory, or one holding several (a sweep's, a profile's)")
    importing.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    results.set_defaults(handler=cmd_results_import)


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

"""`specops history`, `specops compare` and `specops results import`: runs read from, and recorded in, the results
database."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.common import _positive


def add_parser(sub) -> None:
    history = sub.add_parser("history", help="runs in the results database, newest first")
    history.add_argument("profile", nargs="?", help="only this profile's runs")
    history.add_argument("-n", "--limit", type=_positive, help="runs read (default 30; with --trend 500)")
    history.add_argument("--trend", action="store_true", help="write each profile's trend report (HTML + PNG) "
                         "under artifacts/trends/ and print the newest run's regression verdicts")
    history.set_defaults(handler=cmd_history)
    compare = sub.add_parser("compare", help="two runs side by side (run id, uid or uid prefix)")
    compare.add_argument("runs", nargs=2, metavar="RUN")
    compare.set_defaults(handler=cmd_compare)
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
    from specops.regression.runs import profile_runs
    from specops.regression.trend import trend_dir, write_trend
    from specops.results.history import cpu_warning, with_warning

    policy, out = RegressionPolicy(), []
    for profile in sorted({run.profile for run in runs}):
        history = profile_runs([run for run in runs if run.profile == profile])
        if not history:
            continue
        html, png = write_trend(history, policy, trend_dir(profile))
        warning = cpu_warning([(run.run_id, run) for run in history])  # baselines keep to one CPU; the plot does not
        out.append(with_warning(warning, f"{profile}: {len(history)} runs\n  trend: {html}\n         {png}\n"
                                f"{_standing_verdicts(history, policy)}"))
    return "\n\n".join(out)


def _standing_verdicts(history, policy) -> str:
    """The newest run's verdicts; when the newest runs are never judged (interrupted, a primed drafter cache), the
    verdicts of the newest judged run, which still stand, said as such (issue 51: "no runs" over a standing
    regression)."""
    from specops.regression.runs import chronological, never_judged
    from specops.regression.table import verdict_table
    from specops.regression.verdict import evaluate
    from specops.results.calibration import is_calibration

    runs = [r for r in chronological(history) if not is_calibration(r)]
    skipped = []
    while runs and never_judged(runs[-1]):
        skipped.append(runs.pop())
    if not skipped or not runs:
        return verdict_table(evaluate(history, policy))
    why = ", ".join(f"{r.run_id} ({'interrupted' if r.status.value == 'interrupted' else 'drafter cache primed'})"
                    for r in reversed(skipped))
    standing = [r for r in history if r not in skipped]
    return (f"never judged: {why}; the verdicts of {runs[-1].run_id}, the newest run judged, stand:\n"
            f"{verdict_table(evaluate(standing, policy))}")


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

    left: list[str] = []  # pending results a newer specops wrote: kept for it
    with ResultsStore.open() as store:
        done = (durable.import_results(store, args.run_dirs) if args.run_dirs
                else durable.import_unrecorded(store, left))
        where = store.url
    for imported in done:
        print(f"recorded {imported.result.profile} run {imported.result.run_id} ({imported.result.uid[:12]}, "
              f"{imported.result.verdict.value}) from {imported.run_dir}")
    what = "the given run directories" if args.run_dirs else "results earlier runs could not record"
    for why in left:
        print(f"left pending: {why}")
    print(f"{len(done)} run(s) of {what} recorded in {where}" if done
          else f"nothing recorded: {len(left)} pending result(s) left for a newer specops" if left
          else f"nothing to record: no {what}")
    return 0

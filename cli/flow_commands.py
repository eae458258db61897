"""The commands that run a flow of several runs: `sweep`, `compare-profiles`, `upgrade-check`, `calibrate`."""
from __future__ import annotations

import signal
import sys

from cli.common import (
    EXIT_FAILED,
    _positive,
    add_flow_inputs,
    drop_console_tracebacks,
    profile_args,
    terminate_as_interrupt,
)
from prefect_adapters.ephemeral import prefect_defaults
from specops.profile.errors import ProfileError

MAX_SWEEP_CELLS = 64


def add_parser(sub) -> None:
    from prefect_adapters.parameters import CALIBRATE_INPUTS, SWEEP_INPUTS

    sweep = sub.add_parser("sweep", help="a profile over draft length x concurrency (Prefect flow `sweep`): the "
                           "table, where speculation stops paying, the best draft length per concurrency")
    add_flow_inputs(sweep, SWEEP_INPUTS)  # what the deployment's form shows, under the same names
    sweep.add_argument("--max-cells", type=_positive, default=MAX_SWEEP_CELLS, metavar="N",
                       help=f"refuse a grid of more cells than this (default {MAX_SWEEP_CELLS}): each cell is a "
                       "benchmark of its own")
    sweep.set_defaults(handler=cmd_sweep)
    versus = sub.add_parser("compare-profiles", help="several profiles on one target, run one after another, in "
                            "one table (Prefect flow `compare`)")
    versus.add_argument("profiles", nargs="+", metavar="PROFILE")
    versus.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="an override for every profile (repeatable)")
    versus.set_defaults(handler=cmd_compare_profiles)
    upgrade = sub.add_parser("upgrade-check", help="one profile on two engine versions, one after the other "
                             "(Prefect flow `upgrade`): the version facts that differ, speedup, acceptance per "
                             "draft position and cost side by side")
    profile_args(upgrade)
    for side, example in (("before", "backend.image=nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3"),
                          ("after", "backend.image=nvcr.io/nvidia/tritonserver:25.04-vllm-python-py3")):
        upgrade.add_argument(f"--{side}", action="append", default=[], metavar="BACKEND.KEY=VALUE",
                             help=f"a backend override of the {side} side, e.g. {example}, or 'backend={{kind: "
                             "local}' (repeatable; none: the profile as shipped)")
    upgrade.add_argument("--run-id", help="name of the check's directory under artifacts/upgrade/<profile>/")
    upgrade.set_defaults(handler=cmd_upgrade_check)
    calibrate = sub.add_parser("calibrate", help="the profile's base against itself, RUNS times (Prefect flow "
                               "`calibrate`): how many intervals contain 1.00x, and the false speedups' spread")
    add_flow_inputs(calibrate, CALIBRATE_INPUTS)
    calibrate.set_defaults(handler=cmd_calibrate)


def _check_before_prefect(loaded_profiles, run_id: str | None = None, *run_dir: str) -> None:
    """What `specops run` checks before Prefect starts, for every profile a flow will run: the run id (malformed, or
    a directory that exists: exit 2), serving.host, a local target, and this machine (the directories, the results
    database, the hub, the Prefect API, the engine's and the tool's prerequisites: exit 4), instead of after
    Prefect's start-up, or after every run (a taken run id was refused once a calibration had run them all)."""
    from cli.preflight import check_host, check_local_target, environment_problems
    from specops.backends.base import PrerequisiteError
    from specops.pipeline.backend import backend_for, preflight, tool_for
    from specops.run.rundir import check_free_run_id

    check_free_run_id(run_id, *run_dir)
    problems: list[str] = []
    for loaded in loaded_profiles:
        check_host(loaded)
        check_local_target(loaded)
        found = environment_problems(loaded) + preflight(backend_for(loaded.profile), tool_for(loaded.profile))
        problems += [p for p in found if p not in problems]
    if problems:
        raise PrerequisiteError(loaded_profiles[0].profile.name, problems)


def _table_command(args, load, loads: list[tuple]) -> int:
    """A flow of several runs that returns its table: printed, and exit 1 when none of its runs measured."""
    from flows.finish import NoneMeasured

    try:
        print("\n" + _flow_command(args, load, loads))
    except NoneMeasured as none:
        print("\n" + none.table)
        print(f"specops: {none}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _flow_command(args, load, loads: list[tuple]):
    """Run a flow under a private Prefect API (unless PREFECT_API_URL is set), SIGTERM as an interrupt, the CLI's
    `loads` handed over to it (prefect_adapters/refusal.py handed_over). `load` imports the flow and returns the call
    to make: the server's start-up overlaps those imports."""
    prefect_defaults()
    signal.signal(signal.SIGTERM, terminate_as_interrupt)
    from cli.prefect_api import prefect_api, start_prefect_api

    if not getattr(args, "debug", False):
        drop_console_tracebacks()
    started = start_prefect_api()
    call = load()
    from prefect_adapters.refusal import handed_over

    with prefect_api(started), handed_over(*loads):
        return call()


def _flag(name: str) -> str:
    """The sweep's flag of a flow input: what a refusal names."""
    from prefect_adapters.parameters import SWEEP_INPUTS, input_parts

    return input_parts(SWEEP_INPUTS[name])[1].name or name


def _sweep_grid(args, method: str):
    """The grid the flags give, each refusal naming its flag (exit 2), before any work."""
    from pydantic import ValidationError

    from prefect_adapters.parameters import SWEEP_INPUTS, default_of
    from specops.sweep.grid import MAX_KEY, MIN_KEY, SweepGrid, knob_settings, knob_values
    from specops.sweep.replayed import check_count

    knobs = {"draft_lengths": args.draft_lengths, "ngram_min": args.ngram_min, "ngram_max": args.ngram_max}
    if args.from_replay:
        if given := [_flag(name) for name, value in knobs.items() if value != list(default_of(SWEEP_INPUTS[name]))]:
            raise ProfileError("sweep grid", [(_flag("from_replay"), f"the replay's settings carry their own values: "
                                                                    f"drop {', '.join(given)}")])
        check_count(args.from_replay)
    ks = args.draft_lengths
    knobs = {key: knob_values(_flag(name), key, args_value, method) if args_value else []
             for name, key, args_value in (("ngram_min", MIN_KEY, args.ngram_min),
                                           ("ngram_max", MAX_KEY, args.ngram_max))}
    try:
        return SweepGrid(draft_lengths=ks, concurrencies=args.concurrencies, settings=knob_settings(ks, knobs))
    except ValidationError as err:
        raise ProfileError("sweep grid", [(_flag(str(e["loc"][0]) if e["loc"] else "draft_lengths"), e["msg"])
                                          for e in err.errors()]) from None


def cmd_sweep(args) -> int:
    from prefect_adapters.parameters import SWEEP_INPUTS
    from specops.profile.loader import load_profile
    from specops.sweep.grid import validate_grid
    from specops.sweep.replayed import check_replayable

    given = load_profile(args.profile, args.overrides)
    grid = _sweep_grid(args, given.profile.method.kind)
    if args.from_replay:  # the flow replays it: its method has a replay, the vLLM venv is there
        check_replayable(given)
    cells = args.from_replay * len(grid.concurrencies) if args.from_replay else len(grid.cells())
    series = args.from_replay or len(grid.series())
    if cells > args.max_cells:
        raise ProfileError("sweep grid", [("--k x --concurrency", f"{series} series x {len(grid.concurrencies)} "
                                           f"concurrencies are {cells} cells, more than --max-cells "
                                           f"{args.max_cells}; narrow the grid, or raise --max-cells")])
    loaded = validate_grid(given, grid)  # fail fast, before Prefect starts
    _check_before_prefect([loaded], args.run_id, loaded.profile.name)
    bench = loaded.profile.benchmark
    print(f"sweep of {loaded.profile.name}: {cells} cells ({series} series x {len(grid.concurrencies)} "
          f"concurrencies), up to {series + 1} servers, {bench.num_requests} requests x {bench.rounds} round(s) "
          "per cell; cells measured before are reused", file=sys.stderr)
    def load():
        from flows.sweep import sweep
        return lambda: sweep(**{name: getattr(args, name) for name in SWEEP_INPUTS})

    outcome = _flow_command(args, load, [(args.profile, args.overrides, loaded)])  # the flow's profile: this load
    print(f"\n{outcome.table}\n\nsweep: {outcome.run_dir}  (measured now: {', '.join(outcome.measured) or 'none'}; "
          f"servers started: {dict(outcome.server_starts) or 'none'})")
    return 0


def cmd_compare_profiles(args) -> int:
    from specops.profile.loader import check_comparable, load_profile

    loads = [(p, args.overrides, load_profile(p, args.overrides)) for p in args.profiles]
    check_comparable([loaded for _, _, loaded in loads])  # fail fast, before Prefect starts
    _check_before_prefect([loaded for _, _, loaded in loads])
    def load():
        from flows.compare import compare
        return lambda: compare(args.profiles, args.overrides)

    return _table_command(args, load, loads)


def cmd_upgrade_check(args) -> int:
    from specops.profile.loader import load_profile
    from specops.upgrade.sides import sides_of

    given = load_profile(args.profile, args.overrides)
    sides = sides_of(given, args.before, args.after)  # fail fast, before Prefect starts
    _check_before_prefect([loaded for _, loaded in sides], args.run_id, "upgrade", args.profile)
    def load():
        from flows.upgrade import upgrade
        return lambda: upgrade(args.profile, args.before, args.after, args.overrides, args.run_id)

    return _table_command(args, load, [(args.profile, args.overrides, given)])


def cmd_calibrate(args) -> int:
    from prefect_adapters.parameters import CALIBRATE_INPUTS
    from specops.profile.calibration import calibration_of
    from specops.profile.loader import load_profile

    given = load_profile(args.profile, args.overrides)
    loaded = calibration_of(given, args.runs, args.ab_runs)  # fail fast, before Prefect
    _check_before_prefect([loaded], args.run_id, "calibrate", loaded.profile.name)
    def load():
        from flows.calibrate import calibrate
        return lambda: calibrate(**{name: getattr(args, name) for name in CALIBRATE_INPUTS})

    return _table_command(args, load, [(args.profile, args.overrides, given)])

"""`specops janitor`, `settings`, `serve-artifacts`, `check`: what killed runs left, the variables read, the artifacts
server, whether this host can run a profile's engine and benchmark tool.

`make demo` asks `check` before choosing the engine: vLLM's CPU build where it can start, else the embedded runtime,
saying why in that one line. It runs the engine and tool preflight `specops run` runs (the venvs, the pinned
versions, the preloaded libraries, the CPU's instruction sets), and starts nothing.
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from cli.common import EXIT_FAILED, EXIT_PREREQUISITES, profile_args
from specops.settings import ROOT_VARIABLES


def add_parser(sub) -> None:
    janitor = sub.add_parser("janitor", help="stop what killed runs left behind (servers, benchmark tools, ...)")
    janitor.add_argument("--all", action="store_true",
                         help="also what live runs started (everything recorded; the Prefect API is not asked)")
    janitor.set_defaults(handler=cmd_janitor)
    settings = sub.add_parser("settings", help="the environment variables specops reads: default and meaning "
                              "(Markdown)")
    settings.add_argument("--get", metavar="VARIABLE", choices=ROOT_VARIABLES,
                          help="print the path in effect for VARIABLE instead, its default resolved (the Makefile "
                          "reads the cache `make up`'s worker shares with this host's runs so)")
    settings.set_defaults(handler=cmd_settings)
    serve = sub.add_parser("serve-artifacts", help="serve the artifacts root read-only over HTTP (the Prefect UI's "
                           "plots and links) and take alerts at POST /alerts; `make up` starts it")
    serve.add_argument("--root", type=Path, required=True, help="the directory to serve (SPECOPS_ARTIFACTS)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=4201, help="port to bind (default 4201)")
    serve.add_argument("--token-file", type=Path, help="the alert inbox's token: POST /alerts/<token> is taken, any "
                       "other POST refused; made (readable by you only) when missing (default: <root>/.alerts/token)")
    serve.set_defaults(handler=cmd_serve_artifacts)
    check = sub.add_parser("check", help="can this host run the profile's engine and benchmark tool? (starts "
                           "nothing; exit 4 with the reasons in one line when it cannot)")
    profile_args(check)
    check.set_defaults(handler=cmd_check)


def cmd_janitor(args) -> int:
    from specops.pipeline import janitor

    runs = None
    if not args.all:  # a flow run the Prefect API calls running is left alone, whatever its process looks like here
        from prefect_adapters.reaping import ApiUnavailable, flow_runs_alive

        try:
            runs = flow_runs_alive(janitor.owners())
            print(f"janitor: the Prefect API knows {len(runs)} flow run(s) with records here, "
                  f"{sum(runs.values())} still running")
        except ApiUnavailable as err:
            print(f"janitor: {err}; a run counts as over when its specops process is gone")
    stopped = janitor.sweep(everything=args.all, runs=runs, abandoned=_write_row)
    print(janitor.summary(stopped, kept=None if args.all else janitor.live_records(runs)))
    return 0


def _write_row(record: dict) -> None:
    """A killed run's row (specops/pipeline/abandoned.py); one that cannot be written is said, never fatal: the
    janitor's other work goes on."""
    from specops.pipeline.abandoned import record_abandoned

    try:
        print(f"janitor: {record_abandoned(record)}")
    except Exception as err:  # a run directory half gone, a profile this version cannot read
        print(f"janitor: {record['run_dir']}: no row written ({type(err).__name__}: {err})")


def cmd_settings(args) -> int:
    from specops.settings import roots, table

    print(roots()[args.get] if args.get else "\n".join(table()))
    return 0


def cmd_serve_artifacts(args) -> int:
    from specops.fleet.alert_inbox import DEFAULT_TOKEN_FILE, read_or_create_token
    from specops.fleet.artifacts_server import make_server

    def stop(signum, frame):  # serve_forever runs in this thread: leave it by raising, not shutdown()
        raise SystemExit(0)

    token_file = args.token_file or args.root / DEFAULT_TOKEN_FILE
    try:
        token = read_or_create_token(token_file)
    except OSError as err:
        print(f"specops: serve-artifacts cannot read or make the alert token file {token_file}: {err}", file=sys.stderr)
        return EXIT_FAILED
    try:
        server = make_server(args.root, args.host, args.port, token)
    except OSError as err:  # the port taken, an address not this host's
        print(f"specops: serve-artifacts cannot listen on {args.host}:{args.port}: {err}", file=sys.stderr)
        return EXIT_FAILED
    signal.signal(signal.SIGTERM, stop)
    host, port = server.server_address[:2]
    print(f"serving {args.root.resolve()} read-only at http://{host}:{port}/ (alerts: POST /alerts/<the token in "
          f"{token_file}>)", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM through stop()
        pass
    finally:
        server.server_close()
    # Out at once: finalizing what the CLI imported (torch, through the backends) took 0.2-0.6 s, and
    # `make down` expects a stop within a second; every alert was written and closed when it came in.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


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

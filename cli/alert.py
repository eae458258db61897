"""`specops alert setup` and `specops alert test`: the block the alert flows notify through, on the
configured Prefect server (`make up`'s, a team's), never an ephemeral one that would forget it."""
from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

from cli.common import EXIT_FAILED, EXIT_PREREQUISITES
from specops.fleet.deployments import ALERT_BLOCK
from specops.settings import env_name, is_http_url, secret, settings

TEST_SUBJECT = "specops test alert"


def _configured_api() -> str | None:
    from prefect.context import refresh_global_settings_context
    from prefect.settings import PREFECT_API_URL

    refresh_global_settings_context()
    return PREFECT_API_URL.value()


def _fail(message: str, code: int) -> int:
    print(f"specops: {message}", file=sys.stderr)
    return code


def cmd_alert(args) -> int:
    api = _configured_api()
    if not api:
        return _fail("no Prefect server configured (PREFECT_API_URL): a block saved now would go to a throw-away "
                     "one; `make up` starts the project's server (and saves the alert block), or export "
                     "PREFECT_API_URL=http://<server>:4200/api", EXIT_PREREQUISITES)
    return (_setup if args.alert_command == "setup" else _test)(args, api)


def _setup(args, api: str) -> int:
    from prefect_adapters.alert_block import AlertBlockError, save_webhook

    url = secret(settings().specops_alert_url)
    variable = env_name("specops_alert_url")
    if url is None:
        return _fail(f"{variable} is unset: give the URL alerts go to in the environment, not on the command line "
                     f"(a Slack webhook URL is a credential), e.g. {variable}=http://127.0.0.1:4201/alerts "
                     "specops alert setup", EXIT_PREREQUISITES)
    if not is_http_url(url):
        return _fail(f"{variable}: give an http(s) URL with a host (got one starting {url[:8]!r})", EXIT_PREREQUISITES)
    if args.inbox_token_file is not None:  # the artifacts server's inbox: its token in the URL, kept secret
        from specops.fleet.alert_inbox import inbox_url

        try:
            url = inbox_url(url, args.inbox_token_file)
        except (OSError, ValueError) as err:
            return _fail(f"--inbox-token-file: {err}: `specops serve-artifacts --token-file` makes it",
                         EXIT_PREREQUISITES)
    try:
        shown = save_webhook(url, args.block)
    except AlertBlockError as err:
        return _fail(str(err), EXIT_PREREQUISITES)
    print(f"alert block {args.block} -> {shown} (saved on {api}; `specops alert test` sends one)")
    return 0


def _test(args, api: str) -> int:
    from prefect_adapters.alert_block import AlertBlockError, AlertBlockMissing, deliver

    host = socket.gethostname()
    body = (f"A test alert from `specops alert test` on {host}: regression and no-worker alerts sent through "
            f"{args.block} arrive here.")
    try:
        sent = deliver(args.block, TEST_SUBJECT, body, {"event": "test", "host": host})
    except AlertBlockMissing as err:
        return _fail(str(err), EXIT_PREREQUISITES)
    except AlertBlockError as err:
        return _fail(str(err), EXIT_FAILED)
    status = f": HTTP {sent.status}" if sent.status is not None else ""
    print(f"test alert sent through {sent.block} (on {api}) to {sent.where}{status}")
    return 0


def add_parser(sub) -> None:
    alert = sub.add_parser("alert", help="the notification block regression and no-worker alerts go through: "
                           "`alert setup` saves it, `alert test` sends one")
    alert.set_defaults(handler=cmd_alert)
    alert_sub = alert.add_subparsers(dest="alert_command", required=True)
    setup = alert_sub.add_parser("setup", help=f"create or update the Webhook block posting to "
                                 f"${env_name('specops_alert_url')} (read from the environment: `make up` passes "
                                 "ALERT_URL)")
    setup.add_argument("--inbox-token-file", type=Path, help="the URL is the artifacts server's inbox "
                       "(http://host:4201/alerts): append the token it takes, from this file (`specops serve-artifacts "
                       "--token-file`)")
    test = alert_sub.add_parser("test", help="send one test alert through the block and say where it went")
    for command in (setup, test):
        command.add_argument("--block", default=ALERT_BLOCK, help=f"<block type>/<name> (default {ALERT_BLOCK})")
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

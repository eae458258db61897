"""`prefect deploy`'s output, less its worker hint: a filter (stdin to stdout, line by line as it comes).

Prefect 3.9 prints, after each deployment whose pool has no ONLINE worker at that moment
(prefect/cli/deploy/_core.py: "To execute flow runs from these deployments, start a worker ..."), a hint to
start one: 26 times in `make deploy`, and in `make up`, which starts its worker after deploying. `prefect
deploy` has no option to leave it out. Everything else passes unchanged (errors included); the hint becomes
one line at the end naming the pools that had no worker, less those given as --worker-follows (the pool
`make up` starts a worker on next).

    prefect --no-prompt deploy --all 2>&1 | python3 tools/deploy_output.py [--worker-follows POOL]
"""
from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Iterator

HINT_START = "To execute flow runs from these deployments, start a worker"
HINT_END = re.compile(r"\$ prefect worker start --pool '([^']+)'")


def without_worker_hints(lines: Iterable[str], pools: list[str]) -> Iterator[str]:
    """The lines, each hint block dropped (its pool appended to `pools`, once)."""
    hint = False
    for line in lines:
        if line.startswith(HINT_START):
            hint = True
        if not hint:
            yield line
        elif end := HINT_END.search(line):
            hint = False
            if end[1] not in pools:
                pools.append(end[1])


def summary(pools: list[str], follows: list[str]) -> str | None:
    left = [p for p in pools if p not in follows]
    if not left:
        return None
    return (f"no worker was online for {', '.join(repr(p) for p in left)} when deployed: runs there wait for "
            f"one (`prefect worker start --pool <pool> --type process` on a host the pool's runs need)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker-follows", action="append", default=[], metavar="POOL",
                        help="a pool whose worker is started right after: not named at the end")
    args = parser.parse_args(argv)
    pools: list[str] = []
    for line in without_worker_hints(sys.stdin, pools):
        sys.stdout.write(line)
        sys.stdout.flush()
    if note := summary(pools, args.worker_follows):
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`prefect deploy`'s output, less its worker hint: a filter (stdin to stdout, line by line as it comes).

Prefect 3.9 prints, after each deployment whose pool has no ONLINE worker at that moment
(prefect/cli/deploy/_core.py: "To execute flow runs from these deployments, start a worker ..."), a hint to
start one: 26 times in `make deploy`, and in `make up`, which starts its worker after deploying. `prefect
deploy` has no option to leave it out. Everything else passes unchanged (errors included); the hint becomes
one line at the end naming the pools that had no worker, less those given as --worker-follows (the pool
`make up` starts a worker on next).

With --log FILE the output goes to FILE whole, and only a summary to stdout: one line per flow family (its
deployments, their pools from --config, the pools with no worker), the no-worker line, where the log is, and what
--config schedules when (e.g. regression/nightly: the CPU pool's profiles at 02:00 UTC) with one command that
starts such a run now, as printed (--api-url: the server's, which that command then names: `make up`'s is not the
Prefect profile of a shell outside make).
Prefect prints a boxed blurb per deployment (1017 lines for 56 in `make up`, issue 39), which buried the four
lines a user needs; errors ("Error: ..." lines) still reach stdout.

    prefect --no-prompt deploy --all 2>&1 | python3 tools/deploy_output.py [--worker-follows POOL]
        [--log FILE --config prefect.yaml [--api-url URL]]
"""
from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

HINT_START = "To execute flow runs from these deployments, start a worker"
HINT_END = re.compile(r"\$ prefect worker start --pool '([^']+)'")
# Prefect's panel, possibly wrapped over lines: "Deployment 'flow/name' successfully created with id '...'."
CREATED = re.compile(r"Deployment '([^'/]+)/([^']+)' successfully created")


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


def created(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(flow, deployment name) of each deployment Prefect created or updated, from its panels' joined text."""
    panel: list[str] = []
    for line in lines:
        text = line.strip()
        if text.startswith("╭"):
            panel = [""]
        elif panel and text.startswith("╰"):
            yield from CREATED.findall(" ".join(panel))
            panel = []
        elif panel:
            panel.append(text.strip("│ "))


def _deployments(config: Path) -> list[dict]:
    import yaml  # noqa: PLC0415 - Prefect's dependency, in the venv that runs this filter

    return yaml.safe_load(config.read_text()).get("deployments") or []


def pools_by_deployment(config: Path) -> dict[tuple[str, str], str]:
    """(entrypoint function, deployment name) -> work pool, from prefect.yaml."""
    return {(e["entrypoint"].rpartition(":")[2], e["name"]): (e.get("work_pool") or {}).get("name", "?")
            for e in _deployments(config)}


def when(cron: str, timezone: str) -> str:
    """A cron schedule as people say it where it is a daily time (`daily at 02:00 UTC`), else the cron itself."""
    fields = cron.split()
    if len(fields) == 5 and fields[0].isdigit() and fields[1].isdigit() and fields[2:] == ["*", "*", "*"]:
        return f"daily at {int(fields[1]):02d}:{int(fields[0]):02d} {timezone}"
    return f"on cron '{cron}' ({timezone})"


def scheduled(config: Path, deployed: list[tuple[str, str]], api_url: str | None) -> list[str]:
    """Two lines per active schedule of a deployment in prefect.yaml that was deployed: what runs when and where,
    and the one command that starts such a run now (this venv's prefect, and the server's API where given), to
    paste as printed."""
    prefect = Path(sys.executable).parent / "prefect"
    lines = []
    for e in _deployments(config):
        flow = e["entrypoint"].rpartition(":")[2].replace("_", "-")
        if (flow, e["name"]) not in deployed:
            continue
        name = f"{flow}/{e['name']}"
        suite = (e.get("parameters") or {}).get("suite")
        what = f"{len(suite)} profiles, each once and judged against its history" if suite else "its parameters"
        for schedule in (s for s in e.get("schedules") or [] if s.get("active", True) and s.get("cron")):
            lines.append(f"scheduled: {name} {when(schedule['cron'], schedule.get('timezone') or 'UTC')} on "
                         f"{(e.get('work_pool') or {}).get('name', '?')}: {what}")
            lines.append(f"  start one now: {f'PREFECT_API_URL={api_url} ' if api_url else ''}{prefect} deployment "
                         f"run {name}")
    return lines


def families(deployed: list[tuple[str, str]], pools: dict[tuple[str, str], str], idle: list[str]) -> list[str]:
    """One line per flow: how many deployments, on which pools, which of those have no worker. A flow's name is
    its function's with "-" for "_" (flows/*.py name them so); a deployment not found in the config shows "?"."""
    by_flow: dict[str, list[str]] = {}
    for flow, name in deployed:
        by_flow.setdefault(flow, []).append(pools.get((flow.replace("-", "_"), name), "?"))
    lines = []
    for flow, used in by_flow.items():
        counts = ", ".join(f"{pool} {used.count(pool)}" for pool in sorted(set(used)))
        missing = sorted(set(used) & set(idle))
        lines.append(f"  {flow}: {len(used)} deployment{'s' if len(used) > 1 else ''} ({counts})"
                     + (f"; no worker on {', '.join(missing)}" if missing else ""))
    return lines


def quiet(lines: Iterable[str], log: Path, config: Path, follows: list[str], api_url: str | None = None) -> None:
    """Every line to `log`; errors, one line per flow family, the no-worker line and the schedules to stdout."""
    kept: list[str] = []
    with log.open("w") as out:
        for line in lines:
            out.write(line)
            kept.append(line)
            if line.startswith("Error"):
                print(line, end="", flush=True)
    pools: list[str] = []
    deployed = list(created(without_worker_hints(kept, pools)))
    idle = [p for p in pools if p not in follows]
    print(f"deployed {len(deployed)} deployments (`prefect deploy` output: {log}):")
    print("\n".join(families(deployed, pools_by_deployment(config), idle)))
    if note := summary(pools, follows):
        print(note)
    if lines := scheduled(config, deployed, api_url):
        print("\n".join(lines))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker-follows", action="append", default=[], metavar="POOL",
                        help="a pool whose worker is started right after: not named at the end")
    parser.add_argument("--log", type=Path, help="write the whole output here; print only a summary")
    parser.add_argument("--config", type=Path, default=Path("prefect.yaml"), help="the deployments' pools (with --log)")
    parser.add_argument("--api-url", help="the Prefect API the printed run command names (with --log)")
    args = parser.parse_args(argv)
    if args.log:
        quiet(sys.stdin, args.log, args.config, args.worker_follows, args.api_url)
        return 0
    pools: list[str] = []
    for line in without_worker_hints(sys.stdin, pools):
        sys.stdout.write(line)
        sys.stdout.flush()
    if note := summary(pools, args.worker_follows):
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

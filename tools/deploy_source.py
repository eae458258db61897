"""What `prefect deploy` pins for the workers (prefect.yaml's build steps run this in the checkout).

    python3 tools/deploy_source.py commit       HEAD, refused when tracked files have uncommitted
                                                changes (a worker would run HEAD without them) or
                                                when SPECOPS_WORKER_ARTIFACTS is unset
    python3 tools/deploy_source.py repository   $SPECOPS_DEPLOY_REPOSITORY, else the `origin` remote,
                                                else this checkout's path

SPECOPS_DEPLOY_DIRTY=1 deploys HEAD anyway and names the changes left out. Standard library only:
it runs under whatever python3 the deployer has.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


class DeployError(Exception):
    pass


def git(*args: str, cwd: Path | None = None) -> str:
    # GIT_OPTIONAL_LOCKS=0: `git status` does not refresh the index, this only reads the checkout
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=30)
    if done.returncode:
        raise DeployError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.rstrip("\n")  # not strip(): a status line may begin with a space


def checkout_root(cwd: Path | None = None) -> Path:
    try:
        return Path(git("rev-parse", "--show-toplevel", cwd=cwd))
    except DeployError as err:
        raise DeployError(f"{Path(cwd or '.').resolve()} is not a git checkout: workers clone a commit, "
                          f"so deploy from a checkout ({err})") from None


def commit(cwd: Path | None = None, environ: dict[str, str] | None = None) -> tuple[str, str | None]:
    """(HEAD, a warning or None); DeployError when the deployment would not run what the deployer has."""
    environ = os.environ if environ is None else environ
    artifacts = environ.get("SPECOPS_WORKER_ARTIFACTS", "")
    if not artifacts.startswith("/"):
        raise DeployError(
            f"SPECOPS_WORKER_ARTIFACTS={artifacts!r}: set it to an absolute directory on the worker hosts "
            "(`make deploy WORKER_ARTIFACTS=/srv/specops/artifacts`): a flow run's working directory is a "
            "temporary clone, deleted when the run ends")
    root = checkout_root(cwd)
    head = git("rev-parse", "HEAD", cwd=root)
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no", cwd=root).splitlines()]
    if not changed:
        return head, None
    listed = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
    if environ.get("SPECOPS_DEPLOY_DIRTY") == "1":
        return head, f"deploying HEAD {head[:12]} WITHOUT the uncommitted changes to {listed}"
    raise DeployError(f"{root}: uncommitted changes to {listed}; workers clone commit {head[:12]} and would run it "
                      "without them. Commit (and push, if workers clone a remote), or set SPECOPS_DEPLOY_DIRTY=1 "
                      "to deploy HEAD as it is")


def repository(cwd: Path | None = None, environ: dict[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    if url := environ.get("SPECOPS_DEPLOY_REPOSITORY"):
        return url
    root = checkout_root(cwd)
    try:
        return git("remote", "get-url", "origin", cwd=root)
    except DeployError:
        return str(root)


def main(argv: list[str]) -> int:
    if argv not in (["commit"], ["repository"]):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if argv == ["repository"]:
            print(repository())
            return 0
        head, warning = commit()
    except DeployError as err:
        print(f"deploy_source: {err}", file=sys.stderr)
        return 1
    if warning:
        print(f"deploy_source: WARNING: {warning}", file=sys.stderr)
    print(head)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

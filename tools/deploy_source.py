"""What `prefect deploy` pins for the workers (prefect.yaml's build steps run this in the checkout).

    python3 tools/deploy_source.py commit       HEAD, refused when tracked files have uncommitted
                                                changes (a worker would run HEAD without them) or
                                                when a setting the deployments hand the workers
                                                (specops/fleet/deployments.py WORKER_ENV) is unset, empty,
                                                relative or carries a password (the artifacts URL
                                                may be unset: file:// links)
    python3 tools/deploy_source.py repository   $SPECOPS_DEPLOY_REPOSITORY, else the `origin` remote,
                                                else this checkout's path; an http(s) URL without
                                                its user:token@ (said on stderr)

SPECOPS_DEPLOY_DIRTY=1 deploys HEAD anyway and names the changes left out. Standard library only:
it runs under whatever python3 the deployer has.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


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


# What each run setting the deployments hand the workers is for, and the `make deploy` argument that
# sets it. The deployer's variable behind each one is specops/fleet/deployments.py WORKER_ENV's.
DIRECTORY, DATABASE, OPTIONAL_URL = "directory", "database", "optional url"
SETTINGS = {
    "SPECOPS_ARTIFACTS": (DIRECTORY, "the directory on the worker hosts where runs keep their files",
                          "WORKER_ARTIFACTS=/srv/specops/artifacts"),
    "SPECOPS_CACHE": (DIRECTORY, "the model, repository and engine cache on the worker hosts",
                      "WORKER_CACHE=/srv/specops/cache"),
    "SPECOPS_RESULTS_URL": (DATABASE, "the results database every worker writes its RunResults to",
                            "RESULTS_URL=postgresql://specops@db/specops"),
    # Optional: unset or empty, the deployments store "", which the runs read as unset (env_ignore_empty in
    # specops/settings.py): no artifacts server, so file:// links, whatever the worker host's own setting.
    "SPECOPS_ARTIFACTS_URL": (OPTIONAL_URL, "the http(s) address the artifacts directory is served at, for the "
                              "UI's plots and links (unset: file:// links)", "ARTIFACTS_URL=http://artifacts:4201"),
}


def worker_env() -> dict[str, str]:
    """specops/fleet/deployments.py WORKER_ENV (run setting -> the deployer's variable), read from the source of
    the checkout this script belongs to, without importing specops (its requirements may be missing)."""
    source = Path(__file__).resolve().parents[1] / "specops" / "fleet" / "deployments.py"
    for node in ast.parse(source.read_text(), str(source)).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "WORKER_ENV" for t in targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                break
    raise DeployError(f"{source}: no `WORKER_ENV = {{...}}` literal, so the worker settings cannot be checked")


def masked(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)))


def _setting_problem(kind: str | None, value: str | None) -> str | None:
    if kind == OPTIONAL_URL:
        parts = urlsplit((value or "").strip())
        if value and value.strip() and (parts.scheme not in ("http", "https") or not parts.hostname):
            return f"is no http(s) URL ({value!r}): http://host:port, or leave it unset for file:// links"
        return None
    if value is None:
        return "is unset"
    if not value.strip():
        return "is empty" + (f" ({value!r})" if value else "")
    if kind == DIRECTORY and not value.startswith("/"):
        return f"is relative ({value!r}): it would resolve in the run's working directory, a temporary clone"
    if kind == DATABASE:
        parts = urlsplit(value)
        if "://" not in value:
            return f"is no database URL ({value!r}): dialect://user@host/database, or sqlite:////absolute/path"
        if parts.password is not None:
            return (f"carries a password ({masked(value)}), which every deployment would store and show: give "
                    "the workers a ~/.pgpass (or PGPASSWORD in their environment) instead")
        if parts.scheme.startswith("sqlite") and not value.split("://", 1)[1].startswith("//"):
            return f"is no absolute SQLite path ({value!r}): sqlite:////absolute/path/results.db"
    return None


def check_worker_settings(environ: dict[str, str]) -> None:
    """Every job variable the deployments carry must be set: an empty one is no "unset", the worker
    merges it over its host's environment (prefect/workers/process.py ProcessJobConfiguration.
    prepare_for_flow_run), so "" would replace a GPU host's own SPECOPS_RESULTS_URL and send its
    results to a SQLite file under the run's directory."""
    problems, arguments = [], []
    for run_var, deploy_var in worker_env().items():
        kind, purpose, argument = SETTINGS.get(run_var, (None, "", None))
        if why := _setting_problem(kind, environ.get(deploy_var)):
            problems.append(f"  {deploy_var} (the runs' {run_var}{': ' + purpose if purpose else ''}) {why}")
            if argument:
                arguments.append(argument)
    if problems:
        told = f"`make deploy {' '.join(arguments)}`, or the" if arguments else "the"
        raise DeployError("each deployment hands its runs these settings, which replace the worker host's own "
                          "(an empty one too):\n" + "\n".join(problems) + f"\nSay what they are on the worker "
                          f"hosts: {told} SPECOPS_WORKER_* variables for a plain `prefect deploy`")


def commit(cwd: Path | None = None, environ: dict[str, str] | None = None) -> tuple[str, str | None]:
    """(HEAD, a warning or None); DeployError when the deployment would not run what the deployer has."""
    environ = os.environ if environ is None else environ
    check_worker_settings(environ)
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


def without_credentials(url: str) -> tuple[str, bool]:
    """An http(s) URL without its user:token@ part (a user name alone may be the token); an ssh URL without
    a password. `git@host:path` carries no secret and stays as it is. (url, whether anything was dropped)"""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, False
    userinfo, _, host = parts.netloc.rpartition("@")
    if parts.scheme.lower() in ("http", "https"):
        return urlunsplit(parts._replace(netloc=host)), True
    if parts.scheme and ":" in userinfo:
        return urlunsplit(parts._replace(netloc=f"{userinfo.split(':', 1)[0]}@{host}")), True
    return url, False


def repository(cwd: Path | None = None, environ: dict[str, str] | None = None) -> tuple[str, str | None]:
    """(the URL workers clone from, a warning or None): every deployment stores it in its pull steps,
    which the UI shows, so no credential stays in it."""
    environ = os.environ if environ is None else environ
    url = environ.get("SPECOPS_DEPLOY_REPOSITORY")
    if not url:
        root = checkout_root(cwd)
        try:
            url = git("remote", "get-url", "origin", cwd=root)
        except DeployError:
            return str(root), None
    clean, dropped = without_credentials(url)
    if not dropped:
        return url, None
    return clean, (
        f"the deployments clone {clean}: the credentials in the repository URL were dropped (every deployment "
        "shows its pull steps in the UI). Workers authenticate on their own: a git credential helper or "
        "~/.netrc for https, an ssh key for ssh URLs; or give prefect.yaml's git_clone step `access_token: "
        "'{{ prefect.blocks.secret.<name> }}'` (or `credentials:` a GitHub/GitLab/BitBucket credentials "
        "block), which the worker resolves when it runs")


def main(argv: list[str]) -> int:
    if argv not in (["commit"], ["repository"]):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        value, warning = repository() if argv == ["repository"] else commit()
    except DeployError as err:
        print(f"deploy_source: {err}", file=sys.stderr)
        return 1
    if warning:
        print(f"deploy_source: WARNING: {warning}", file=sys.stderr)
    print(value)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

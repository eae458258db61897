"""tools/deploy_source.py: the commit `prefect deploy` pins (HEAD of a clean checkout, every worker setting
given) and the repository (without credentials)."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("deploy_source", ROOT / "tools" / "deploy_source.py")
deploy_source = importlib.util.module_from_spec(spec)
spec.loader.exec_module(deploy_source)

ENV = {"SPECOPS_WORKER_ARTIFACTS": "/srv/specops/artifacts", "SPECOPS_WORKER_CACHE": "/srv/specops/cache",
       "SPECOPS_WORKER_RESULTS_URL": "postgresql://specops@db/specops",
       "SPECOPS_WORKER_ARTIFACTS_URL": "http://artifacts.example:4201"}
# Without them no deployment: all but the artifacts server's URL (unset, the runs link files as file://).
REQUIRED = sorted(set(ENV) - {"SPECOPS_WORKER_ARTIFACTS_URL"})


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("1\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "one")
    return tmp_path


def test_a_clean_checkout_pins_head(repo):
    assert deploy_source.commit(repo, ENV) == (git(repo, "rev-parse", "HEAD"), None)
    (repo / "untracked.txt").write_text("not deployed, not in the way\n")
    assert deploy_source.commit(repo, ENV)[1] is None


def test_uncommitted_changes_are_refused_naming_the_file_unless_allowed(repo):
    (repo / "a.txt").write_text("2\n")
    with pytest.raises(deploy_source.DeployError, match=r"uncommitted changes to a\.txt.*SPECOPS_DEPLOY_DIRTY=1"):
        deploy_source.commit(repo, ENV)
    head, warning = deploy_source.commit(repo, {**ENV, "SPECOPS_DEPLOY_DIRTY": "1"})
    assert head == git(repo, "rev-parse", "HEAD") and "WITHOUT the uncommitted changes to a.txt" in warning


def test_the_settings_checked_are_the_deployments_job_variables():
    from specops.fleet.deployments import WORKER_ENV

    assert deploy_source.worker_env() == WORKER_ENV  # read from the source, without importing specops
    assert set(deploy_source.SETTINGS) == set(WORKER_ENV) and set(ENV) == set(WORKER_ENV.values())


@pytest.mark.parametrize("deploy_var", REQUIRED)
@pytest.mark.parametrize("value", [None, "", "  "])
def test_an_unset_or_empty_worker_setting_is_refused_naming_it_its_use_and_the_make_argument(repo, deploy_var, value):
    """"" would be stored and replace the worker host's own setting: a GPU host's results would go to SQLite."""
    from specops.fleet.deployments import WORKER_ENV

    env = {k: v for k, v in ENV.items() if k != deploy_var}
    if value is not None:
        env[deploy_var] = value
    run_var = next(r for r, d in WORKER_ENV.items() if d == deploy_var)
    with pytest.raises(deploy_source.DeployError) as refused:
        deploy_source.commit(repo, env)
    message = str(refused.value)
    argument = deploy_source.SETTINGS[run_var][2]
    assert f"{deploy_var} (the runs' {run_var}: {deploy_source.SETTINGS[run_var][1]}) is " in message
    assert ("is unset" if value is None else "is empty") in message
    assert f"`make deploy {argument}`" in message
    assert [line for line in message.splitlines() if line.startswith("  ")] == [line for line in message.splitlines()
                                                                            if deploy_var in line]  # only that one


def test_every_missing_setting_is_named_at_once_with_the_make_arguments_for_all(repo):
    with pytest.raises(deploy_source.DeployError) as refused:
        deploy_source.commit(repo, {})
    message = str(refused.value)
    assert all(var in message for var in REQUIRED) and "ARTIFACTS_URL" not in message
    assert ("`make deploy WORKER_CACHE=/srv/specops/cache WORKER_ARTIFACTS=/srv/specops/artifacts "
            "RESULTS_URL=postgresql://specops@db/specops`") in message


@pytest.mark.parametrize(("deploy_var", "value", "why"), [
    ("SPECOPS_WORKER_ARTIFACTS", "artifacts", r"is relative \('artifacts'\): .*temporary clone"),
    ("SPECOPS_WORKER_CACHE", "./cache", r"is relative \('./cache'\)"),
    ("SPECOPS_WORKER_RESULTS_URL", "results.db", r"is no database URL"),
    ("SPECOPS_WORKER_RESULTS_URL", "sqlite:///results.db", r"is no absolute SQLite path"),
])
def test_a_setting_that_would_resolve_in_the_runs_temporary_clone_is_refused(repo, deploy_var, value, why):
    with pytest.raises(deploy_source.DeployError, match=f"{deploy_var} .*{why}"):
        deploy_source.commit(repo, {**ENV, deploy_var: value})


@pytest.mark.parametrize("value", [None, "", "  "])
def test_without_an_artifacts_server_the_deployments_link_files_as_before(repo, value):
    env = {k: v for k, v in ENV.items() if k != "SPECOPS_WORKER_ARTIFACTS_URL"}
    if value is not None:
        env["SPECOPS_WORKER_ARTIFACTS_URL"] = value
    assert deploy_source.commit(repo, env) == (git(repo, "rev-parse", "HEAD"), None)


@pytest.mark.parametrize("value", ["artifacts:4201", "ftp://host/a", "http://"])
def test_an_artifacts_url_that_no_browser_opens_is_refused(repo, value):
    with pytest.raises(deploy_source.DeployError, match=r"SPECOPS_WORKER_ARTIFACTS_URL .*is no http\(s\) URL"):
        deploy_source.commit(repo, {**ENV, "SPECOPS_WORKER_ARTIFACTS_URL": value})


def test_a_results_url_with_a_password_is_refused_without_showing_it(repo):
    env = {**ENV, "SPECOPS_WORKER_RESULTS_URL": "postgresql+psycopg://specops:s3cret-pw@db:5432/specops"}
    with pytest.raises(deploy_source.DeployError) as refused:
        deploy_source.commit(repo, env)
    assert "carries a password (postgresql+psycopg://specops:***@db:5432/specops)" in str(refused.value)
    assert "~/.pgpass" in str(refused.value) and "s3cret-pw" not in str(refused.value)


def test_absolute_directories_and_database_urls_pass(repo):
    head = git(repo, "rev-parse", "HEAD")
    for url in ("postgresql://specops@db/specops", "postgresql+psycopg://db.example:5432/specops",
                "sqlite:////srv/specops/artifacts/results.db"):
        assert deploy_source.commit(repo, {**ENV, "SPECOPS_WORKER_RESULTS_URL": url}) == (head, None)


def test_repository_is_the_setting_else_origin_else_the_checkout(repo):
    assert deploy_source.repository(repo, {}) == (str(repo), None)
    git(repo, "remote", "add", "origin", "https://example.invalid/specops.git")
    assert deploy_source.repository(repo, {}) == ("https://example.invalid/specops.git", None)
    assert deploy_source.repository(repo, {"SPECOPS_DEPLOY_REPOSITORY": "file:///srv/specops.git"}) == \
        ("file:///srv/specops.git", None)


@pytest.mark.parametrize(("url", "clean"), [
    ("https://oauth2:glpat-SECRET@git.example/team/specops.git", "https://git.example/team/specops.git"),
    ("https://ghp_SECRET@github.com/team/specops.git", "https://github.com/team/specops.git"),
    ("http://user:SECRET@git.example:8080/specops.git", "http://git.example:8080/specops.git"),
    ("ssh://git:SECRET@git.example/specops.git", "ssh://git@git.example/specops.git"),
])
def test_credentials_in_the_origin_url_are_dropped_and_said_so_on_stderr(repo, url, clean, monkeypatch, capsys):
    """Every deployment stores the URL in its pull steps, which the UI shows."""
    git(repo, "remote", "add", "origin", url)
    got, warning = deploy_source.repository(repo, {})
    assert got == clean and "SECRET" not in warning
    assert "credentials in the repository URL were dropped" in warning
    assert "credential helper" in warning and "~/.netrc" in warning and "access_token" in warning

    monkeypatch.chdir(repo)  # as the build step runs it, in the checkout
    monkeypatch.delenv("SPECOPS_DEPLOY_REPOSITORY", raising=False)
    assert deploy_source.main(["repository"]) == 0
    out, err = capsys.readouterr()
    assert out == clean + "\n" and "SECRET" not in out + err
    assert err.startswith("deploy_source: WARNING: the deployments clone " + clean)


def test_a_credential_in_the_deploy_repository_setting_is_dropped_too(repo):
    got, warning = deploy_source.repository(repo, {"SPECOPS_DEPLOY_REPOSITORY": "https://u:SECRET@git.example/s.git"})
    assert got == "https://git.example/s.git" and warning and "SECRET" not in warning


@pytest.mark.parametrize("url", ["git@github.com:team/specops.git", "ssh://git@git.example/specops.git",
                                 "https://git.example/specops.git", "/srv/git/specops.git"])
def test_urls_without_a_secret_are_kept_as_they_are(repo, url):
    assert deploy_source.repository(repo, {"SPECOPS_DEPLOY_REPOSITORY": url}) == (url, None)


def test_outside_a_checkout_says_so(tmp_path):
    with pytest.raises(deploy_source.DeployError, match="is not a git checkout"):
        deploy_source.commit(tmp_path, ENV)


# The Makefile's side, for real: `make up` / `make deploy` run with stand-ins for the venv's programs (BIN) and
# for curl (the server health check), so nothing starts and prefect.yaml is not rewritten. The stand-in python3
# that the build step's preflight runs records the SPECOPS_WORKER_* variables make exported, then stops make.
MAKE = ["make", "--no-print-directory", "-o", ".venv/.installed", "-o", ".venv-aiperf/.installed"]


@pytest.fixture
def make_env(tmp_path) -> tuple[list[str], dict[str, str], Path]:
    import os
    import stat

    fake = tmp_path / "bin"
    fake.mkdir()
    record = tmp_path / "exported"
    scripts = {name: "exit 0\n" for name in ("python", "prefect", "specops", "curl")}
    # The cache `make up` gives its worker is the one specops uses here: the Makefile asks the real one.
    scripts["specops"] = f'[ "$1" = settings ] && exec {Path(sys.executable).parent / "specops"} "$@"\nexit 0\n'
    scripts["python3"] = (f'[ "$2" = commit ] && env | grep "^SPECOPS_WORKER_" | sort > "{record}"\n'
                          f'exec {shutil.which("python3")} "$@"\n')
    for name, body in scripts.items():
        (fake / name).write_text("#!/bin/sh\n" + body)
        (fake / name).chmod(stat.S_IRWXU)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPECOPS_", "WORKER_", "MAKE", "MFLAGS"))
           and k not in ("RESULTS_URL", "PREFECT_DB_URL", "PREFECT_API_URL")}
    env["PATH"] = f"{fake}:{env['PATH']}"
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")  # specops's default cache: $XDG_CACHE_HOME/specops
    args = [f"BIN={fake}", f"PREFECT_HOME={tmp_path / 'prefect-home'}", "PREFECT_PORT=1"]
    return args, env, record


def _make(target: str, args: list[str], env: dict[str, str], *more: str) -> subprocess.CompletedProcess:
    return subprocess.run([*MAKE, target, *args, *more], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)


def _exported(record: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in record.read_text().splitlines())


def test_make_up_tells_its_local_worker_what_specops_run_here_would_use(make_env):
    args, env, record = make_env
    _make("up", args, env)
    assert _exported(record) == {"SPECOPS_WORKER_ARTIFACTS": f"{ROOT}/artifacts",
                                 # specops's default (`specops settings --get SPECOPS_CACHE`), as `specops run` here
                                 "SPECOPS_WORKER_CACHE": f"{env['XDG_CACHE_HOME']}/specops",
                                 "SPECOPS_WORKER_RESULTS_URL": f"sqlite:///{ROOT}/artifacts/results.db",
                                 "SPECOPS_WORKER_ARTIFACTS_URL": "http://127.0.0.1:4201"}  # the server up starts

    env = dict(env, SPECOPS_ARTIFACTS="runs", SPECOPS_CACHE="/srv/c", SPECOPS_RESULTS_URL="postgresql://s@db/r")
    _make("up", args, env)
    assert _exported(record) == {"SPECOPS_WORKER_ARTIFACTS": f"{ROOT}/runs", "SPECOPS_WORKER_CACHE": "/srv/c",
                                 "SPECOPS_WORKER_RESULTS_URL": "postgresql://s@db/r",
                                 "SPECOPS_WORKER_ARTIFACTS_URL": "http://127.0.0.1:4201"}

    _make("up", args, env, "WORKER_ARTIFACTS=/srv/a", "RESULTS_URL=postgresql://t@db/t", "ARTIFACTS_PORT=4999")
    assert _exported(record) == {"SPECOPS_WORKER_ARTIFACTS": "/srv/a", "SPECOPS_WORKER_CACHE": "/srv/c",
                                 "SPECOPS_WORKER_RESULTS_URL": "postgresql://t@db/t",
                                 "SPECOPS_WORKER_ARTIFACTS_URL": "http://127.0.0.1:4999"}


def test_make_deploy_has_no_defaults_and_is_refused_until_told(make_env):
    """Not even this host's own settings: they are paths on the deployer's host, not on the workers'."""
    args, env, record = make_env
    env = dict(env, SPECOPS_ARTIFACTS=str(ROOT / "artifacts"), SPECOPS_RESULTS_URL="postgresql://s@db/r")
    done = _make("deploy", args, env)
    assert done.returncode != 0
    assert _exported(record) == {"SPECOPS_WORKER_ARTIFACTS": "", "SPECOPS_WORKER_CACHE": "",
                                 "SPECOPS_WORKER_RESULTS_URL": "", "SPECOPS_WORKER_ARTIFACTS_URL": ""}
    for var in ("SPECOPS_WORKER_ARTIFACTS", "SPECOPS_WORKER_CACHE", "SPECOPS_WORKER_RESULTS_URL"):
        assert f"  {var} (the runs' " in done.stderr, done.stderr
    assert ("`make deploy WORKER_CACHE=/srv/specops/cache WORKER_ARTIFACTS=/srv/specops/artifacts "
            "RESULTS_URL=postgresql://specops@db/specops`") in done.stderr

    told = _make("deploy", args, env, "WORKER_ARTIFACTS=/srv/a", "WORKER_CACHE=/srv/c", "RESULTS_URL=postgresql://t@db/t")
    assert _exported(record) == {"SPECOPS_WORKER_ARTIFACTS": "/srv/a", "SPECOPS_WORKER_CACHE": "/srv/c",
                                 "SPECOPS_WORKER_RESULTS_URL": "postgresql://t@db/t", "SPECOPS_WORKER_ARTIFACTS_URL": ""}
    assert "SPECOPS_WORKER_" not in told.stderr  # past the settings (then refused or not for the working tree)

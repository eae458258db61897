"""What `specops run` checks before Prefect starts: each problem here would otherwise surface
minutes later, or as a traceback from deep inside a library, instead of one sentence naming
the setting to fix.

Problems with what the user typed (the run id, the profile's address) raise, exit 2; problems
with this machine's environment come back as sentences for one PrerequisiteError, exit 4.
"""
from __future__ import annotations

import os
import re
import socket
import tempfile
from pathlib import Path

from specops.http_client import Client, HttpError, StatusError, is_loopback
from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile
from specops.results.store import results_problems
from specops.run.rundir import check_free_run_id
from specops.settings import artifacts_root, cache_root, env_name, existing_ancestor, free_space_problem, settings
from specops.sources.schemes import missing_target_files, parse_source

PROBE_TIMEOUT_S = 3.0  # a hub or a Prefect server that needs longer to answer is not there for us


def check_run_id(profile_name: str, run_id: str | None) -> None:
    """Malformed, or taken by an earlier run (whose files would be overwritten): RunDirError."""
    check_free_run_id(run_id, profile_name)


def check_local_target(loaded: LoadedProfile) -> None:
    """A local target directory that cannot be served, named with what it lacks, before anything starts."""
    source = loaded.profile.target.source
    ref = parse_source(source) if source else None
    if ref is None or ref.scheme != "local":
        return
    path = Path(ref.name).expanduser()
    if not path.is_dir():
        raise ProfileError(str(loaded.path), [("target.source", f"{source}: {path} is not a directory")])
    if missing := missing_target_files(path):
        raise ProfileError(str(loaded.path), [("target.source", f"{source}: {path} lacks {' and '.join(missing)}; "
                                               "the server and the benchmark tokenize with the target's files")])


def check_host(loaded: LoadedProfile) -> None:
    """Servers bind serving.host (the container backends too: they run with host networking and
    take their ports from a bind on this machine), so a bind here is the test."""
    host = loaded.profile.serving.host
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, 0))
            return
        except socket.gaierror as err:
            why = f"{host!r} cannot be resolved ({err.strerror})"
        except OSError as err:
            why = f"{host!r} is not an address of this machine (binding it fails: {err.strerror})"
    raise ProfileError(str(loaded.path), [("serving.host", f"{why}; use 127.0.0.1 (this machine only), 0.0.0.0 "
                                           "(every interface) or one of this machine's addresses")])


def environment_problems(loaded: LoadedProfile) -> list[str]:
    """This machine's side: writable artifact and cache roots, a results database that takes rows, a
    reachable hub, a live Prefect API."""
    return directory_problems() + results_problems() + hub_problems(loaded) + prefect_api_problems()


def directory_problems() -> list[str]:
    problems, given = [], settings()
    roots = [("specops_artifacts", artifacts_root()), ("specops_cache", cache_root())]
    if given.specops_lock_dir is not None:  # the host lock's: a run fails there at its first step otherwise
        roots.append(("specops_lock_dir", given.specops_lock_dir))
    for field, root in roots:
        why, var = _not_writable(root), env_name(field)
        if why:
            where = (f"{var}={getattr(given, field)}" if field in given.model_fields_set
                     else f"{root} (the default: {var} is unset)")
            problems.append(f"{where}: {why}; point {var} at a writable directory (created if missing)")
    if not problems and (short := free_space_problem()):
        problems.append(short)
    return problems


def _not_writable(path: Path) -> str | None:
    existing = existing_ancestor(path)
    if not existing.is_dir():
        return f"{existing} is not a directory" if existing == path else f"{existing} is a file, not a directory"
    try:  # a real write: os.access says yes to root on a read-only file system
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".specops-write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        return f"{existing} is not writable ({err.strerror})"
    return None


def hub_problems(loaded: LoadedProfile) -> list[str]:
    """hf:// sources not in the cache need the hub; say so now rather than after a long retry."""
    p = loaded.profile
    wanted = [(f"{section}.source", getattr(p, section).source) for section in ("target", "draft")
              if getattr(p, section) is not None and getattr(p, section).source]
    missing = []
    for field, source in wanted:
        ref = parse_source(source)
        if ref.scheme == "hf" and not _hub_snapshot_cached(cache_root() / "hf", ref.name, ref.revision):
            missing.append((field, source))
    if not missing:
        return []
    from huggingface_hub import constants  # noqa: PLC0415 - only runs that name the hub pay for it

    if constants.HF_HUB_OFFLINE:
        return [f"{field}: {source} is not in the cache ({cache_root() / 'hf'}) and HF_HUB_OFFLINE is set: "
                "unset HF_HUB_OFFLINE to download it, or use a local checkpoint" for field, source in missing]
    why = _unreachable(constants.ENDPOINT)
    if why is None:
        return []
    return [f"{field}: {source} is not in the cache ({cache_root() / 'hf'}) and the hub {constants.ENDPOINT} "
            f"cannot be reached ({why}): connect this machine (or set HF_ENDPOINT to a mirror), or use a local "
            "checkpoint" for field, source in missing]


def _hub_snapshot_cached(hub_cache: Path, repo_id: str, revision: str | None) -> bool:
    """The hub client's own layout: models--org--name/{refs/<rev>, snapshots/<commit>/}."""
    repo = hub_cache / f"models--{repo_id.replace('/', '--')}"
    commit = revision or "main"
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        ref = repo / "refs" / commit
        if not ref.is_file():
            return False
        commit = ref.read_text().strip()
    snapshot = repo / "snapshots" / commit
    return snapshot.is_dir() and any(snapshot.iterdir())


def prefect_api_problems() -> list[str]:
    """A configured PREFECT_API_URL that nothing answers (e.g. after `make down`): the flow would die
    with "Failed to reach API" and a traceback after its start-up."""
    from prefect.settings import PREFECT_API_URL  # noqa: PLC0415 - run imports Prefect next anyway

    url = PREFECT_API_URL.value()
    if not url:
        return []
    why = _not_a_prefect_3_server(url.rstrip("/"))
    if why is None:
        return []
    where, undo = _api_url_origin()
    return [f"PREFECT_API_URL={url} (set by {where}) {why}: start the server (`make up`) or point it at a "
            f"Prefect 3 server, or {undo} to run with a temporary server"]


def _not_a_prefect_3_server(api: str) -> str | None:
    """Why the API at `api` cannot run specops' flows: no answer, an error status, or another major version
    (a Prefect 2 server takes the client's requests and fails them deep in the flow)."""
    client = Client(env_proxy=not is_loopback(api))  # a remote Prefect server may sit behind the proxy
    try:
        client.text("GET", api + "/health", PROBE_TIMEOUT_S)
        version = client.text("GET", api + "/admin/version", PROBE_TIMEOUT_S).strip().strip('"')
    except StatusError as err:
        return f"answers HTTP {err.status} instead of Prefect's health and version ({str(err)[:160]})"
    except HttpError as err:
        return f"does not answer ({err})"
    finally:
        client.close()
    if version.split(".")[0] != "3":
        from prefect import __version__ as ours  # noqa: PLC0415

        return f"is a Prefect {version or '(unknown version)'} server; this specops' client is Prefect {ours}"
    return None


def _api_url_origin() -> tuple[str, str]:
    if os.environ.get("PREFECT_API_URL"):
        return "the environment", "`unset PREFECT_API_URL`"
    from prefect.settings import get_current_settings  # noqa: PLC0415
    from prefect.settings.profiles import load_current_profile  # noqa: PLC0415

    settings, profile = get_current_settings(), load_current_profile()
    if any(getattr(key, "name", key) == "PREFECT_API_URL" for key in profile.settings):
        return (f"the Prefect profile {profile.name!r} in {settings.profiles_path} (PREFECT_HOME={settings.home})",
                "`prefect config unset PREFECT_API_URL`")
    return (f"a Prefect settings file (.env, prefect.toml or pyproject.toml in {Path.cwd()})",
            "remove it from that file")


def _unreachable(url: str) -> str | None:
    """Why nothing answers at url, or None when something does (an HTTP error is an answer)."""
    client = Client(env_proxy=not is_loopback(url))  # a remote Prefect server may sit behind the proxy
    try:
        client.text("GET", url, PROBE_TIMEOUT_S)
    except StatusError:
        return None
    except HttpError as err:
        return str(err)
    finally:
        client.close()
    return None

"""Every environment variable specops reads: its name, default and meaning, in one model.

A field's variable is its name in upper case, exactly (a lower-case `hf_token` is not HF_TOKEN, as for
every other reader of the environment), so the name is written once: modules that mention a variable
(in a hint, or to pass it on to a container) take it from `env_name`. `settings()` reads the environment
anew on each call: a variable changed by the caller (a test's monkeypatch, a flow's worker) counts from
the next call on. Building a child process's environment (copying or scrubbing os.environ) is not a
setting and does not come here.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import AliasGenerator, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

UNSET = "unset"  # how the table shows a variable with no default value


class Settings(BaseSettings):
    # An empty variable counts as unset, as `os.environ.get(...) or default` did before this model.
    model_config = SettingsConfigDict(extra="forbid", frozen=True, env_ignore_empty=True, case_sensitive=True,
                                      alias_generator=AliasGenerator(validation_alias=str.upper))

    specops_artifacts: Path = Field(Path("artifacts"), description="root of the run directories and of the "
                                    "default results.db (a relative path is taken from the working directory)")
    specops_artifacts_url: str | None = Field(None, description="http(s) URL at which SPECOPS_ARTIFACTS is "
                                              "served (`specops serve-artifacts`, which `make up` starts): "
                                              "artifacts embed plots and link files by it; unset: file:// links")
    specops_cache: Path | None = Field(None, description="cross-run cache of models, rendered repositories, "
                                       "locks and the hub cache; unset: $XDG_CACHE_HOME/specops")
    xdg_cache_home: Path | None = Field(None, description="base of the default cache (its specops/ directory) "
                                        "when SPECOPS_CACHE is unset; unset: ~/.cache")
    specops_profiles: Path | None = Field(None, description="profile directory; unset: ./profiles, else the "
                                          "profiles/ beside the installed package")
    # A PostgreSQL URL may carry a password.
    specops_results_url: SecretStr | None = Field(None, description="results database (SQLAlchemy URL, "
                                                  "postgresql:// means psycopg 3); unset: results.db under "
                                                  "SPECOPS_ARTIFACTS (SQLite)")
    specops_min_free_mb: int = Field(100, ge=0, description="free space (MB) a run needs under SPECOPS_ARTIFACTS "
                                     "and SPECOPS_CACHE to start: a run directory holds its logs, exports and "
                                     "report (0.2-50 MB here); 0 turns the check off")
    specops_lock_dir: Path | None = Field(None, description="directory of the host locks that keep two runs of "
                                          "one host from measuring at once, whoever starts them; unset: "
                                          "/run/lock/specops, else /tmp/specops-locks")
    specops_vllm_venv: Path | None = Field(None, description="venv holding the vLLM CPU build; unset: the one "
                                           "`make install` builds in the checkout")
    specops_aiperf: Path | None = Field(None, description="AIPerf executable; unset: the one in the venv "
                                        "`make install` builds in the checkout, else `aiperf` on PATH")
    specops_vllm_cache: Path = Field(Path("/tmp/vllm-sdists"), description="where tools/versions/extract_vllm.py "
                                     "keeps the vLLM archives it downloads from PyPI (its --cache)")
    # docker-py's own default on Linux (docker/constants.py DEFAULT_UNIX_SOCKET); docker-py reads the variable itself.
    docker_host: str = Field("unix:///var/run/docker.sock", description="Docker daemon address, as docker-py "
                             "reads it; specops reads it to say where it looked and whether the daemon is local")
    hf_token: SecretStr | None = Field(None, description="Hugging Face token for downloads and server containers "
                                       "(by name, never on a command line); unset: huggingface_hub's own lookup")
    vllm_api_key: SecretStr | None = Field(None, description="key of a vllm-serve server with serving api_key "
                                           "set, and of the seed's synthesis server (sent as Bearer)")
    specops_endpoint_api_key: SecretStr | None = Field(None, description="key of draft.train.data.endpoint, "
                                                       "sent only in the Authorization header")
    # A Slack or Discord webhook URL is a credential: read from the environment, never a command line.
    specops_alert_url: SecretStr | None = Field(None, description="URL the alert block (webhook/specops-regression) "
                                                "posts to, read by `specops alert setup` (`make up` passes "
                                                "ALERT_URL; default: the artifacts server's /alerts inbox, its token "
                                                "appended)")

    @field_validator("specops_artifacts_url")
    @classmethod
    def _artifacts_url(cls, value: str | None) -> str | None:
        if value is not None and not is_http_url(value):
            raise ValueError(f"SPECOPS_ARTIFACTS_URL={value!r}: give the http(s) URL the artifacts root is served "
                             "at, e.g. http://127.0.0.1:4201 (or unset it: file:// links)")
        return value.rstrip("/") if value is not None else None


def installed_venv(name: str, checkout: Path, marker: str = "bin/python") -> Path:
    """A venv `make install` builds beside specops' own (.venv-aiperf, .venv-vllm): the checkout's, else the one
    beside the running interpreter's venv. A Prefect worker runs each flow from a fresh clone of the deployed
    commit, which holds no venvs, with the interpreter of the checkout it was started from (`make up`'s .venv),
    whose siblings are the ones that checkout's `make install` built. The checkout's path when neither has it."""
    for root in (checkout / name, Path(sys.prefix).parent / name):
        if (root / marker).exists():
            return root
    return checkout / name


def is_http_url(value: str) -> bool:
    """An http(s) URL with a host: what a browser or a webhook call can reach."""
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


class SettingsError(ValueError):
    """A SPECOPS_* (or other read) variable whose value does not parse: the variable, its value and what it takes."""


def settings() -> Settings:
    """The environment's settings, read now."""
    try:
        return Settings()
    except ValidationError as exc:
        e = exc.errors()[0]
        name = str(e["loc"][0]) if e["loc"] else "?"
        value = "" if "SECRET" in name or "URL" in name else f"={e.get('input')!r}"  # a URL may carry a password
        raise SettingsError(f"environment variable {name}{value}: {e['msg']}; see `specops settings` for what each "
                            "variable takes (or unset it for its default)") from None


def env_name(field: str) -> str:
    """The environment variable of a Settings field (KeyError for a field the model lacks)."""
    return Settings.model_fields[field].validation_alias  # a typo fails where the name is taken, not unread


def secret(value: SecretStr | None) -> str | None:
    """A secret setting's value for the one place that sends it; None when unset."""
    return value.get_secret_value() if value is not None else None


def table() -> list[str]:
    """The variables as a Markdown table (the docs' environment reference, and `specops settings`)."""
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = UNSET if field.default is None else f"`{field.default}`"
        meaning = field.description.replace("|", r"\|")  # a bare | would split the cell
        rows.append(f"| `{env_name(name)}` | {default} | {meaning} |")
    return rows


# ---- where runs write: the artifacts and cache roots, and whether they have the room a run needs ----
def artifacts_root() -> Path:
    return settings().specops_artifacts.resolve()


def cache_root() -> Path:
    """Cross-run cache for models and rendered repositories ($SPECOPS_CACHE, else $XDG_CACHE_HOME/specops,
    else ~/.cache/specops): the one default for the host's CLI runs and `make up`'s worker (the Makefile asks
    `specops settings --get SPECOPS_CACHE`)."""
    s = settings()
    if s.specops_cache is not None:
        return s.specops_cache.resolve()
    return (s.xdg_cache_home or Path.home() / ".cache") / "specops"


ROOT_VARIABLES = (env_name("specops_artifacts"), env_name("specops_cache"))


def roots() -> dict[str, Path]:
    """The roots a run writes under, by their variable: the values in effect, defaults resolved."""
    return dict(zip(ROOT_VARIABLES, (artifacts_root(), cache_root())))


def existing_ancestor(path: Path) -> Path:
    """`path`, or its nearest parent that exists: where a directory not made yet (mkdir(parents=True) makes
    it) will live, so the disk and the permissions that count for it."""
    existing = Path(path)
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    return existing


def free_space_problem() -> str | None:
    """Less free space under the artifacts or the cache root than a run needs; None if enough.
    (A full disk mid-run still ends the run FAILED at its step, naming the file: this makes it rare.)"""
    need_mb = settings().specops_min_free_mb
    # The cache too: a run renders its repositories and takes its locks there, even when every model is cached.
    for var, root in roots().items():
        try:
            free_mb = shutil.disk_usage(existing_ancestor(root)).free / 2**20
        except OSError:
            continue  # not a directory we can look at: the writability check says why
        if free_mb < need_mb:  # one disk short is one message, even when both roots are on it
            return (f"{var}={root}: {free_mb:.0f} MB free, below the {need_mb} MB a run needs "
                    f"(SPECOPS_MIN_FREE_MB); free space there, or point {var} at a disk with room")
    return None

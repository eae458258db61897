"""Where the results database is and how it is opened: an engine safe for concurrent writers, and errors
that say what to do without ever showing the password.

An SQLite file under the artifacts root by default, so a laptop needs nothing; PostgreSQL when
$SPECOPS_RESULTS_URL names one, so GPU workers on several hosts share one history. The schema
is versioned with alembic and upgraded on open: a database written by an older specops is
migrated in place, never dropped.
"""
from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL, Connection, Engine

from specops.settings import artifacts_root, secret, settings

MIGRATIONS = Path(__file__).with_name("migrations")
_PG_MIGRATION_LOCK = 0x5EC0_95  # advisory lock key: concurrent opens migrate one at a time


def results_url() -> str:
    """$SPECOPS_RESULTS_URL, else the SQLite file `results.db` under the artifacts root."""
    return secret(settings().specops_results_url) or f"sqlite:///{artifacts_root() / 'results.db'}"


def engine_url(url: str | URL) -> URL:
    """The URL SQLAlchemy gets: a bare `postgresql://` (or `postgres://`) means psycopg 3."""
    parsed = sa.make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def masked(url: str | URL) -> str:
    """The URL as it may be shown to anyone: the password replaced by ***."""
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return "<unparseable URL>"  # it might be a password-bearing string: never echo it


def _scrub(text: str, url: URL) -> str:
    """Drivers may quote connection parameters in errors; keep the password out of them."""
    return text.replace(url.password, "***") if url.password else text


def explain(exc: BaseException, url: URL) -> str:
    """The driver's own sentence (never SQLAlchemy's echo of the statement and its parameters) and
    what to do about it, which depends on whether the database is a file or a server."""
    orig = getattr(exc, "orig", None) or exc
    reason = _scrub(str(orig).split("\n")[0], url).strip() or type(orig).__name__
    if url.get_backend_name() != "sqlite":
        return (f"{reason}\nCheck that the server is running and that SPECOPS_RESULTS_URL is right, or unset "
                "SPECOPS_RESULTS_URL to use the SQLite file under the artifacts root.")
    where = url.database or "the SQLite file"
    if "not a database" in reason or "malformed" in reason:
        return (f"{where} is not a readable SQLite database ({reason}): move it aside (a new one is made in its "
                "place) or restore it from a backup, or set SPECOPS_RESULTS_URL to another database")
    if "readonly" in reason or "read-only" in reason or "unable to open" in reason or isinstance(orig, OSError):
        return (f"{where} cannot be written ({reason}): make the file and its directory writable (and check the "
                "disk has space), or set SPECOPS_RESULTS_URL to another database")
    return f"{reason} ({where})"


def create_engine(url: str | URL) -> Engine:
    """A sync engine with the settings each dialect needs for safe concurrent writers."""
    target = engine_url(url)
    if target.get_backend_name() == "sqlite":
        if (file := sqlite_file(target)) is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(target, connect_args={"timeout": 30})
        _sqlite_real_transactions(engine)
        return engine
    if target.get_backend_name() == "postgresql" and "connect_timeout" not in target.query:
        return sa.create_engine(target, connect_args={"connect_timeout": 10}, pool_pre_ping=True)
    return sa.create_engine(target, pool_pre_ping=True)


def sqlite_file(url: URL) -> Path | None:
    """The file an SQLite URL names (None: in memory, a URI filename, not SQLite)."""
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:" \
            or url.database.startswith("file:"):
        return None
    return Path(url.database)


def _sqlite_real_transactions(engine: Engine) -> None:
    """pysqlite defers BEGIN and commits around DDL by itself, so a migration or an upsert could
    interleave with another process's. SQLAlchemy's documented recipe: let SQLAlchemy emit BEGIN,
    IMMEDIATE for writers (they take the write lock up front and wait out the busy timeout)."""

    @sa.event.listens_for(engine, "connect")
    def _no_pysqlite_transactions(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("writer") else "BEGIN")


def alembic_config() -> Config:
    """Alembic's configuration, built in code: the scripts ship inside the package, no alembic.ini."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    return config


def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def migrate(engine: Engine, revision: str = "head") -> None:
    """Upgrade the schema to `revision` in one transaction, one migrator at a time."""
    with engine.connect() as conn:
        conn.execution_options(writer=True)
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_PG_MIGRATION_LOCK)))
            config = alembic_config()
            config.attributes["connection"] = conn
            command.upgrade(config, revision)


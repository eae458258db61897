"""The results database: every run's RunResult, appended, queryable across runs and hosts.

Where the database is and how it is opened and migrated: specops/results/database.py. The full record
is kept as JSON next to a few indexed columns, so the columns serve queries and the JSON stays the truth.
"""
from __future__ import annotations

import math
import secrets
from typing import Any, Self

import sqlalchemy as sa
from alembic.util.exc import CommandError
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from specops.results.compat import ReadNotes, describe, load_record
from specops.results.database import create_engine, engine_url, explain, masked, migrate, results_url, sqlite_file
from specops.results.model import RunResult

MIN_PREFIX = 6  # shortest uid prefix `get` accepts: shorter ones match too many runs to be useful

metadata = sa.MetaData()
# The shape the queries use; migrations/versions/ holds how each version of it was built.
runs = sa.Table(
    "runs",
    metadata,
    sa.Column("uid", sa.String(64), primary_key=True),
    sa.Column("run_id", sa.String(128), nullable=False, index=True),
    sa.Column("profile", sa.String(128), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("verdict", sa.String(16), nullable=False),
    sa.Column("method", sa.String(64), nullable=False),
    sa.Column("backend", sa.String(64), nullable=False),
    sa.Column("started_at", sa.Double, nullable=False),
    sa.Column("finished_at", sa.Double, nullable=False),
    sa.Column("speedup", sa.Double),
    sa.Column("speedup_low", sa.Double),
    sa.Column("speedup_high", sa.Double),
    sa.Column("schema_version", sa.Integer, nullable=False),
    sa.Column("result", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
    sa.Index("ix_runs_profile_started_at", "profile", "started_at"),
)


class ResultsError(RuntimeError):
    """The results database cannot be used as asked; the message says what to do."""


class RunNotFound(ResultsError, LookupError):
    pass


class AmbiguousRun(ResultsError, LookupError):
    pass


def _finite(value: Any) -> Any:
    """JSON has no NaN/Infinity (PostgreSQL's JSONB refuses them): store them as the strings
    pydantic reads back into floats."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def _row(result: RunResult) -> dict[str, Any]:
    speedup = result.speedup
    return {
        "uid": result.uid,
        "run_id": result.run_id,
        "profile": result.profile,
        "status": result.status.value,
        "verdict": result.verdict.value,
        "method": result.method,
        "backend": result.backend,
        "started_at": result.started_at,
        "finished_at": result.finished_at,
        "speedup": speedup.point if speedup else None,
        "speedup_low": speedup.low if speedup else None,
        "speedup_high": speedup.high if speedup else None,
        "schema_version": result.schema_version,
        "result": _finite(result.model_dump(mode="json")),
    }


class ResultsStore:
    """Appends RunResults and reads them back; `ResultsStore.open()` is the way in."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.url = masked(engine.url)

    @classmethod
    def open(cls, url: str | None = None) -> ResultsStore:
        """Connect to `url` (default: `results_url()`) and migrate its schema to head."""
        raw = url or results_url()
        try:
            target = engine_url(raw)
        except sa.exc.ArgumentError:
            raise ResultsError(
                f"the results database URL {masked(raw)} is not a database URL; set SPECOPS_RESULTS_URL "
                "to e.g. postgresql://user:password@host:5432/specops, or unset it for the SQLite file"
            ) from None
        shown = masked(raw)
        try:
            engine = create_engine(target)
            migrate(engine)
        except CommandError as exc:
            raise ResultsError(
                f"the results database at {shown} has a schema this specops does not know ({exc}); "
                "it was probably written by a newer specops: upgrade specops"
            ) from None
        except (sa.exc.SQLAlchemyError, OSError, ImportError) as exc:
            raise ResultsError(f"cannot open the results database at {shown}: {explain(exc, target)}") from None
        return cls(engine)

    def check_writable(self) -> None:
        """A row written and rolled back: the database takes this run's result (a read-only file, a
        full disk or a user without INSERT fail here, before the run measures for minutes)."""
        probe = {"uid": f"specops-write-probe-{secrets.token_hex(6)}", "run_id": "write-probe", "profile": "-",
                 "status": "-", "verdict": "-", "method": "-", "backend": "-", "started_at": 0.0,
                 "finished_at": 0.0, "schema_version": 0, "result": {}}
        try:
            with self.engine.connect() as conn:
                conn.execution_options(writer=True)
                transaction = conn.begin()
                try:
                    conn.execute(runs.insert().values(probe))
                finally:
                    transaction.rollback()
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            raise ResultsError(f"the results database at {self.url} cannot take a run's result: "
                               f"{explain(exc, self.engine.url)}") from None

    def append(self, result: RunResult) -> None:
        """Store the run; storing a uid again replaces its row (a retried task must not duplicate)."""
        try:
            self._upsert(_row(result))
        except (sa.exc.SQLAlchemyError, OSError) as exc:  # the driver's message, not the 2 KB statement
            raise ResultsError(f"could not record run {result.run_id} ({result.uid[:12]}) in the results database "
                               f"at {self.url}: {explain(exc, self.engine.url)}") from None

    def _upsert(self, row: dict[str, Any]) -> None:
        updates = {key: value for key, value in row.items() if key != "uid"}
        with self.engine.connect() as conn:
            conn.execution_options(writer=True)
            with conn.begin():
                dialect = conn.dialect.name
                if dialect in ("postgresql", "sqlite"):
                    insert = (postgresql if dialect == "postgresql" else sqlite).insert(runs).values(row)
                    conn.execute(insert.on_conflict_do_update(index_elements=[runs.c.uid], set_=updates))
                elif not conn.execute(runs.update().where(runs.c.uid == row["uid"]).values(updates)).rowcount:
                    conn.execute(runs.insert().values(row))

    def get(self, ref: str, notes: ReadNotes | None = None) -> RunResult:
        """The run whose uid, uid prefix (>= 6 characters) or run id is `ref`. A record written by a
        newer specops comes back with what this one understands (`notes` says what was left out);
        one that does not load at all is a ResultsError naming it."""
        with self.engine.connect() as conn:
            exact = conn.execute(sa.select(runs.c.result).where(runs.c.uid == ref)).scalar_one_or_none()
            if exact is not None:
                return _load_one(exact, notes)
            matches = conn.execute(self._candidates().where(runs.c.run_id == ref)).all()
            if not matches and len(ref) >= MIN_PREFIX:
                matches = conn.execute(self._candidates().where(runs.c.uid.startswith(ref, autoescape=True))).all()
            if len(matches) == 1:
                return _load_one(self._fetch(conn, matches[0].uid), notes)
        if len(matches) > 1:
            listing = "\n".join(f"  {m.uid}  {m.run_id}  {m.profile}  {m.status}" for m in matches[:20])
            more = f"\n  ... and {len(matches) - 20} more" if len(matches) > 20 else ""
            raise AmbiguousRun(f"{ref!r} matches {len(matches)} runs; use a longer uid:\n{listing}{more}")
        hint = f" (a uid prefix needs at least {MIN_PREFIX} characters)" if len(ref) < MIN_PREFIX else ""
        raise RunNotFound(f"no run with uid or run id {ref!r} in {self.url}{hint}; `specops history` lists runs")

    def history(self, profile: str | None = None, limit: int = 50, notes: ReadNotes | None = None) -> list[RunResult]:
        """Runs newest first (by start time), of one profile or of all. A record this specops cannot
        read (a newer one's, changed beyond what it understands) is skipped, never the end of the
        listing: `notes` collects it, and what was left out of records shown in part."""
        query = sa.select(runs.c.result).order_by(runs.c.started_at.desc(), runs.c.uid.desc()).limit(limit)
        if profile is not None:
            query = query.where(runs.c.profile == profile)
        notes = notes if notes is not None else ReadNotes()
        out = []
        with self.engine.connect() as conn:
            for data in conn.execute(query).scalars():
                loaded = load_record(data)
                notes.add(loaded, data)
                if loaded.result is not None:
                    out.append(loaded.result)
        return out

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResultsStore({self.url})"

    @staticmethod
    def _candidates() -> sa.Select:
        return sa.select(runs.c.uid, runs.c.run_id, runs.c.profile, runs.c.status).order_by(runs.c.started_at.desc())

    @staticmethod
    def _fetch(conn: Connection, uid: str) -> Any:
        return conn.execute(sa.select(runs.c.result).where(runs.c.uid == uid)).scalar_one()


def _load_one(data: Any, notes: ReadNotes | None) -> RunResult:
    loaded = load_record(data)
    if notes is not None:
        notes.add(loaded, data)
    if loaded.result is None:
        raise ResultsError(f"stored {describe(data)} cannot be shown by this specops: {loaded.problem}")
    return loaded.result


def results_problems(url: str | None = None) -> list[str]:
    """Whether the results database takes a result, checked before a run measures: [] or one sentence.
    An SQLite file not made yet is not made here (a refused run leaves nothing behind): its directory's
    writability is the check, which preflight makes of the artifacts root."""
    try:
        file = sqlite_file(sa.make_url(url or results_url()))
    except sa.exc.ArgumentError:
        file = None  # open() says what is wrong with it
    if file is not None and not file.exists():
        return []
    try:
        with ResultsStore.open(url) as store:
            store.check_writable()
    except ResultsError as exc:
        return [str(exc)]
    return []

"""The SQL database shared by the three SQL stores: engine, schema and transactions.

Session handling lives here once. Stores ask for ``transaction(operation, write=...)``,
get a Core ``Connection`` inside a transaction, and every ``SQLAlchemyError`` leaving it
becomes a ``StorageError``.

SQLite (the standalone default) gets WAL journaling, so readers never wait for the writer,
plus a busy timeout and ``BEGIN IMMEDIATE`` for writes: a deferred transaction that reads
and then writes can fail at once with "database is locked" when another connection wrote in
between, while an immediate one takes the write lock up front and waits for it. Writers of
this process additionally queue on a lock, which is cheaper and fairer than SQLite's
sleeping busy handler when many task threads commit at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Table, and_, create_engine, event, insert, select, update
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from worker.errors import StorageError
from worker.storage.sql.schema import metadata
from worker.util.secrets import is_secret

log = logging.getLogger(__name__)

DEFAULT_BUSY_TIMEOUT_MS = 10_000
_MASK_PLACEHOLDER = "MASKEDb8f1c2"


class SqlDatabase:
    """One SQLAlchemy engine for the SQL config, offset and status stores.

    ``url`` is any SQLAlchemy URL (``sqlite:////var/lib/connect/connect.db`` by default,
    ``postgresql+psycopg://...`` by setting). The stores share one instance: each store's
    ``start()`` calls ``start()`` here and each ``stop()`` calls ``stop()``; the first start
    creates the engine and the tables (idempotently), the last stop disposes the engine.
    """

    def __init__(self, url: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                 echo: bool = False) -> None:
        try:
            self._url: URL = make_url(url)
        except ArgumentError as exc:
            raise StorageError("Invalid SQL storage URL") from exc
        self._sqlite = self._url.get_backend_name() == "sqlite"
        self._in_memory = self._sqlite and is_sqlite_memory(self._url)
        self._busy_timeout_ms = busy_timeout_ms
        self._echo = echo
        self._lifecycle_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._users = 0
        self._engine: Engine | None = None

    @property
    def url(self) -> str:
        """The URL with any password masked, safe to log."""
        return masked_url(self._url)

    @property
    def engine(self) -> Engine:
        """The engine; only while started."""
        if self._engine is None:
            raise StorageError("SQL storage is not started")
        return self._engine

    def start(self) -> None:
        """Register a user; the first one opens the engine and creates missing tables."""
        with self._lifecycle_lock:
            if self._users == 0:
                engine = self._create_engine()
                try:
                    metadata.create_all(engine)
                except SQLAlchemyError as exc:
                    engine.dispose()
                    raise StorageError(f"Creating tables failed: {describe_error(exc)}") from exc
                self._engine = engine
                log.info("SQL storage opened at %s", self.url)
            self._users += 1

    def stop(self) -> None:
        """Unregister a user; the last one disposes the engine. Extra calls are ignored."""
        with self._lifecycle_lock:
            if self._users == 0:
                return
            self._users -= 1
            if self._users == 0 and self._engine is not None:
                self._engine.dispose()
                self._engine = None
                log.info("SQL storage closed at %s", self.url)

    @contextmanager
    def transaction(self, operation: str, *, write: bool = False,
                    consistent: bool = False) -> Iterator[Connection]:
        """A connection inside one transaction, committed when the block exits cleanly.

        ``operation`` names the work in error messages. ``write`` takes SQLite's write lock
        up front. ``consistent`` asks for one snapshot across several SELECTs (SQLite and
        MySQL give that by default; PostgreSQL needs REPEATABLE READ).
        """
        engine = self._engine
        if engine is None:
            raise StorageError(f"{operation} failed: SQL storage is not started")
        # In-memory SQLite has a single shared connection, so readers must queue too.
        lock: AbstractContextManager[Any] = (
            self._write_lock if self._sqlite and (write or self._in_memory) else nullcontext()
        )
        try:
            with lock, engine.connect() as conn:
                if self._sqlite:
                    conn.execution_options(sqlite_begin="IMMEDIATE" if write else "DEFERRED")
                elif consistent and engine.dialect.name == "postgresql":
                    conn.execution_options(isolation_level="REPEATABLE READ")
                with conn.begin():
                    yield conn
        except SQLAlchemyError as exc:
            raise StorageError(f"{operation} failed: {describe_error(exc)}") from exc

    def _create_engine(self) -> Engine:
        # hide_parameters keeps bound values -- connector configs may hold passwords -- out
        # of exception messages and echo logs.
        kwargs: dict[str, Any] = {"hide_parameters": True, "echo": self._echo}
        if self._sqlite:
            kwargs["connect_args"] = {"check_same_thread": False}
            if self._in_memory:
                kwargs["poolclass"] = StaticPool
            else:
                self._ensure_directory()
        else:
            # Server databases drop idle connections; check before handing one out.
            kwargs["pool_pre_ping"] = True
        try:
            engine = create_engine(self._url, **kwargs)
        except (SQLAlchemyError, ImportError) as exc:
            raise StorageError(f"Cannot open SQL storage at {self.url}: {exc}") from exc
        if self._sqlite:
            event.listen(engine, "connect", self._on_sqlite_connect)
            event.listen(engine, "begin", _on_sqlite_begin)
        return engine

    def _ensure_directory(self) -> None:
        database = self._url.database or ""
        if database.startswith("file:"):
            return
        try:
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"Cannot create the directory of {self.url}") from exc

    def _on_sqlite_connect(self, dbapi_connection: Any, _record: Any) -> None:
        # Stop the sqlite3 module from issuing its own BEGIN (it skips it before SELECTs);
        # _on_sqlite_begin emits the right one.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            cursor.execute("PRAGMA journal_mode = WAL")
            # In WAL mode NORMAL cannot corrupt the database; it only skips an fsync per
            # commit, which at-least-once offsets and idempotent status writes tolerate.
            cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()


def _on_sqlite_begin(conn: Connection) -> None:
    mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
    conn.exec_driver_sql(f"BEGIN {mode}")


def masked_url(url: URL) -> str:
    """``url`` safe for logs and messages: its password, and the value of any query
    parameter whose name says it holds a secret (``?password=``, ``?sslpassword=``), are
    masked."""
    # A placeholder that URL quoting leaves alone, then the mask the password gets.
    secret = {k: _MASK_PLACEHOLDER for k in url.query if is_secret(k)}
    shown = url.update_query_dict(secret).render_as_string(hide_password=True)
    return shown.replace(_MASK_PLACEHOLDER, "***") if secret else shown


def is_sqlite_memory(url: URL) -> bool:
    """Whether a SQLite URL names an in-memory database (private to one process)."""
    database = url.database or ""
    return (database in ("", ":memory:") or database.startswith("file::memory:")
            or url.query.get("mode") == "memory")


def describe_error(exc: SQLAlchemyError) -> str:
    # The driver's message names the failure ("database is locked") without bound values.
    orig = getattr(exc, "orig", None)
    return f"{type(exc).__name__}: {orig}" if orig is not None else type(exc).__name__


def upsert(conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]],
           keys: Sequence[str], *, replace: bool = True) -> None:
    """Insert ``rows``; a row whose ``keys`` exist replaces it, or is skipped if not ``replace``.

    Uses the database's native upsert where SQLAlchemy has one, so concurrent writers of the
    same key cannot collide; other databases get an update-or-insert per row.
    """
    if not rows:
        return
    name = conn.dialect.name
    values = [dict(r) for r in rows]
    non_keys = [c for c in values[0] if c not in keys]
    if name in ("sqlite", "postgresql"):
        dialect_insert = sqlite.insert if name == "sqlite" else postgresql.insert
        stmt = dialect_insert(table)
        if replace:
            stmt = stmt.on_conflict_do_update(
                index_elements=list(keys), set_={c: stmt.excluded[c] for c in non_keys})
        else:
            stmt = stmt.on_conflict_do_nothing(index_elements=list(keys))
        conn.execute(stmt, values)
        return
    if name in ("mysql", "mariadb"):
        my_stmt = mysql.insert(table)
        if replace:
            my_stmt = my_stmt.on_duplicate_key_update({c: my_stmt.inserted[c] for c in non_keys})
        else:
            my_stmt = my_stmt.prefix_with("IGNORE")
        conn.execute(my_stmt, values)
        return
    for row in values:
        where = and_(*(table.c[k] == row[k] for k in keys))
        if replace:
            changes = {c: row[c] for c in non_keys}
            if conn.execute(update(table).where(where).values(changes)).rowcount:
                continue
        elif conn.execute(select(1).select_from(table).where(where)).first() is not None:
            continue
        conn.execute(insert(table).values(row))

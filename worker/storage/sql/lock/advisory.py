"""PostgreSQL: a session advisory lock on a connection of its own, held for the worker's life.

``pg_try_advisory_lock`` on one key per state: advisory locks are per database already,
and the key hashes the schema the stores' tables resolve to (``current_schema()``), so
states in two schemas of one database do not conflict. The server drops a session's lock
when the session ends, however the worker died (the kernel closes its socket). No
transaction stays open, so nothing holds back vacuum.

The holder records itself in ``connect_state_lock`` with its backend PID; a refused worker
believes the row only when ``pg_locks`` shows that backend holding the key, so a row left
by a killed worker never misleads. A ``Keeper`` checks the connection every
``KEEP_INTERVAL_S``; if it broke (server restart, network), the lock went with it and is
taken again on a new connection, or an ERROR says which worker took it meanwhile.
"""

from __future__ import annotations

import hashlib
import time

from sqlalchemy import Connection, delete, select, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError

from worker.errors import StorageError
from worker.storage.sql.database import describe_error, upsert
from worker.storage.sql.lock.base import (
    OWNER_READ_TIMEOUT_S,
    Keeper,
    KeptStateLock,
    LockOwner,
    StateInUseError,
    lock_engine,
    log,
    poll_until,
)
from worker.storage.sql.schema import state_lock

KEEP_INTERVAL_S = 10.0
REMEDY = "set storage.sql.url to another database (or schema)"
ROW = "standalone"

_HOLDER_PID = text(
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid::bigint = :high AND objid::bigint = :low")


def advisory_key(schema: str) -> int:
    """The signed 64-bit key of the state in ``schema``."""
    digest = hashlib.blake2b(f"connect-plane standalone state\0{schema}".encode(),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class AdvisoryStateLock(KeptStateLock):
    """A PostgreSQL session advisory lock on the state's key."""

    def __init__(self, url: URL, owner: LockOwner, database: str,
                 keep_interval_s: float = KEEP_INTERVAL_S) -> None:
        super().__init__(database, "a PostgreSQL advisory lock")
        self._owner = owner
        self._engine = lock_engine(url, database)
        self._conn: Connection | None = None
        self._key = 0
        self._backend = ""
        self._held = False
        self._lost_logged = False
        self._keeper = Keeper("state-lock-keeper", keep_interval_s, self._keep)

    @classmethod
    def acquire(cls, url: URL, owner: LockOwner, database: str,
                keep_interval_s: float = KEEP_INTERVAL_S,
                owner_timeout_s: float = OWNER_READ_TIMEOUT_S) -> AdvisoryStateLock:
        """Take the lock; StateInUseError naming the holder if another worker has it."""
        lock = cls(url, owner, database, keep_interval_s)
        try:
            with lock._guard:
                holder = lock._try_lock(owner_timeout_s)
        except SQLAlchemyError as exc:
            lock._close()
            raise StorageError(f"Cannot lock the state database {database}: "
                               f"{describe_error(exc)}") from exc
        except BaseException:
            lock._close()
            raise
        if not lock._held:
            lock._close()
            raise StateInUseError(database, holder, REMEDY)
        lock._keeper.start()
        return lock

    def _give_up(self) -> None:
        # Ending the session (_dispose) releases the lock anyway.
        if self._conn is not None and self._held:
            self._conn.execute(delete(state_lock).where(
                state_lock.c.name == ROW, state_lock.c.holder == self._backend))
            self._conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": self._key})

    def _dispose(self) -> None:
        self._close()

    def _close(self) -> None:
        """After a failed acquire: end the session (which drops any lock it took)."""
        self._drop_connection()
        self._engine.dispose()

    # --- under self._guard ------------------------------------------------------------

    def _drop_connection(self) -> None:
        self._held = False
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except SQLAlchemyError:
                pass

    def _try_lock(self, owner_timeout_s: float) -> LockOwner | None:
        """Open a connection and try the key: held (``_held``), or the recorded holder
        (None if it did not appear within ``owner_timeout_s``)."""
        conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        self._conn = conn
        self._key = advisory_key(str(conn.scalar(text("SELECT current_schema()")) or ""))
        deadline = time.monotonic() + owner_timeout_s
        while True:
            if conn.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": self._key}):
                self._held = True
                self._record(conn)
                return None
            holder = self._holder(conn)
            if holder is not None or not poll_until(deadline):
                return holder

    def _record(self, conn: Connection) -> None:
        # Only the lock's holder creates the table: no two workers race to.
        state_lock.create(conn, checkfirst=True)
        self._backend = str(conn.scalar(text("SELECT pg_backend_pid()")))
        since_ms = int(self._owner.since * 1000)
        upsert(conn, state_lock, [{
            "name": ROW, "holder": self._backend, "pid": self._owner.pid,
            "host": self._owner.host, "url": self._owner.url, "since_ms": since_ms,
            "renewed_ms": since_ms, "lease_ms": 0}], ["name"])

    def _holder(self, conn: Connection) -> LockOwner | None:
        """The recorded holder, if the backend holding the key is the one it records."""
        key = self._key & 0xFFFF_FFFF_FFFF_FFFF
        try:
            pid = conn.scalar(_HOLDER_PID, {"high": key >> 32, "low": key & 0xFFFF_FFFF})
            row = conn.execute(select(state_lock).where(state_lock.c.name == ROW)).first()
        except SQLAlchemyError:  # e.g. the holder has not created the table yet
            return None
        if pid is None or row is None or row.holder != str(pid):
            return None
        return LockOwner(int(row.pid), row.host, row.url, row.since_ms / 1000)

    def _keep(self) -> None:
        with self._guard:
            if self._released:
                return
            if self._held and self._conn is not None:
                try:
                    self._conn.exec_driver_sql("SELECT 1")
                    return
                except SQLAlchemyError as exc:
                    log.warning("The connection holding the lock on the state database %s "
                                "failed (%s); taking the lock again on a new one",
                                self.database, describe_error(exc))
            self._reconnect()

    def _reconnect(self) -> None:
        self._drop_connection()
        try:
            holder = self._try_lock(OWNER_READ_TIMEOUT_S)
        except SQLAlchemyError as exc:
            log.warning("Cannot lock the state database %s again yet (%s)", self.database,
                        describe_error(exc))
            return
        if self._held:
            self._lost_logged = False
            log.info("Holding the state database %s again", self.database)
        elif not self._lost_logged:
            self._lost_logged = True  # once, not every KEEP_INTERVAL_S
            log.error("Lost the lock on the state database %s with its connection, and "
                      "another standalone worker took it (%s): both may now run the same "
                      "connectors. Stop one of them.", self.database,
                      holder.describe() if holder is not None else "not named")

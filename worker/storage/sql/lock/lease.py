"""Other databases (MySQL, MariaDB, ...): a lease in ``connect_state_lock``, renewed.

Without a lock that the server drops with the session (as PostgreSQL's advisory locks)
that works the same on every database, the holder owns one row for ``lease_s`` at a time
and renews it every third of that. A worker finding the row held refuses; one finding it
not renewed for longer than the lease (its holder died without stopping) takes it over,
with a compare-and-set on the old holder and renewal time so that two cannot both win.
Times are the workers' own clocks: on several hosts they must agree (NTP), within a
fraction of the lease. A worker killed without stopping blocks a new one until its lease
ends; the refusal says when.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from sqlalchemy import Engine, Row, delete, insert, inspect, select, update
from sqlalchemy.engine import URL
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from worker.errors import StorageError
from worker.storage.sql.database import describe_error
from worker.storage.sql.lock.base import (
    Keeper,
    KeptStateLock,
    LockOwner,
    StateInUseError,
    format_time,
    lock_engine,
    log,
)
from worker.storage.sql.schema import state_lock

LEASE_S = 30.0
REMEDY = "set storage.sql.url to another database (or schema)"
ROW = "standalone"
_TAKE_ATTEMPTS = 3


def _now_ms() -> int:
    return int(time.time() * 1000)


def _owner(row: Row[Any]) -> LockOwner:
    return LockOwner(int(row.pid), row.host, row.url, row.since_ms / 1000)


class LeaseStateLock(KeptStateLock):
    """A lease on the state, renewed by a ``Keeper`` while the worker runs."""

    def __init__(self, url: URL, owner: LockOwner, database: str,
                 lease_s: float = LEASE_S) -> None:
        super().__init__(database, f"a lease renewed every {lease_s / 3:.0f} s")
        self._owner = owner
        self._lease_ms = int(lease_s * 1000)
        self._token = uuid.uuid4().hex
        self._engine: Engine = lock_engine(url, database)
        self._held = False
        self._keeper = Keeper("state-lock-lease", lease_s / 3, self._keep)

    @classmethod
    def acquire(cls, url: URL, owner: LockOwner, database: str,
                lease_s: float = LEASE_S) -> LeaseStateLock:
        """Take the lease; StateInUseError naming the holder if another worker has it."""
        lock = cls(url, owner, database, lease_s)
        try:
            lock._create_table()
            holder = lock._take()
        except SQLAlchemyError as exc:
            lock._engine.dispose()
            raise StorageError(f"Cannot lock the state database {database}: "
                               f"{describe_error(exc)}") from exc
        except BaseException:
            lock._engine.dispose()
            raise
        if holder is not None:
            lock._engine.dispose()
            ends = format_time((holder.renewed_ms + holder.lease_ms) / 1000)
            raise StateInUseError(database, _owner(holder), REMEDY,
                                  f"; if that worker is no longer running, its lease ends "
                                  f"at {ends}")
        lock._held = True
        lock._keeper.start()
        return lock

    def _give_up(self) -> None:
        # Should it fail, the lease ends on its own.
        with self._engine.begin() as conn:
            conn.execute(delete(state_lock).where(state_lock.c.name == ROW,
                                                  state_lock.c.holder == self._token))

    def _dispose(self) -> None:
        self._held = False
        self._engine.dispose()

    def _create_table(self) -> None:
        try:
            state_lock.create(self._engine, checkfirst=True)
        except SQLAlchemyError:
            # Two workers starting together both found no table; one created it.
            if not inspect(self._engine).has_table(state_lock.name):
                raise

    def _row(self, now_ms: int) -> dict[str, Any]:
        return {"name": ROW, "holder": self._token, "pid": self._owner.pid,
                "host": self._owner.host, "url": self._owner.url,
                "since_ms": int(self._owner.since * 1000), "renewed_ms": now_ms,
                "lease_ms": self._lease_ms}

    def _take(self) -> Row[Any] | None:
        """Take or renew the lease: None when this worker holds it, else the holder's row."""
        row: Row[Any] | None = None
        for _ in range(_TAKE_ATTEMPTS):
            now = _now_ms()
            try:
                with self._engine.begin() as conn:
                    row = conn.execute(select(state_lock).where(state_lock.c.name == ROW)
                                       ).first()
                    if row is None:
                        conn.execute(insert(state_lock).values(self._row(now)))
                        return None
                    mine = row.holder == self._token
                    if not mine and now <= row.renewed_ms + row.lease_ms:
                        return row
                    taken = conn.execute(update(state_lock).where(
                        state_lock.c.name == ROW, state_lock.c.holder == row.holder,
                        state_lock.c.renewed_ms == row.renewed_ms).values(self._row(now)))
                    if taken.rowcount == 1:
                        if not mine:
                            log.warning("Took over the state database %s from the standalone "
                                        "worker %s, whose lease ended at %s", self.database,
                                        _owner(row).describe(),
                                        format_time((row.renewed_ms + row.lease_ms) / 1000))
                        return None
            except IntegrityError:
                pass  # another worker inserted the row first: look again
        if row is None:
            raise StorageError(f"Cannot lock the state database {self.database}: the lock row "
                               "changed under every attempt")
        return row

    def _keep(self) -> None:
        with self._guard:
            if self._released:
                return
            try:
                holder = self._take()
            except (SQLAlchemyError, StorageError) as exc:
                log.warning("Could not renew the lease on the state database %s (%s); "
                            "retrying", self.database,
                            describe_error(exc) if isinstance(exc, SQLAlchemyError) else exc)
                return
            if holder is None:
                if not self._held:
                    log.info("Holding the state database %s again", self.database)
                self._held = True
            elif self._held:
                self._held = False  # logged once, when it is lost
                log.error("Lost the lease on the state database %s, not renewed in time, "
                          "and another standalone worker took it (%s): both may now run the "
                          "same connectors. Stop one of them.", self.database,
                          _owner(holder).describe())

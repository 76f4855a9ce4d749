"""What every state lock shares: who holds it, the refusal, and the thread that keeps it.

A refusal names the holder, so the holder records itself (``LockOwner``: PID, host, REST
URL, start time) where a refused worker can read it: in the SQLite lock file, or in the
``connect_state_lock`` row on a server database.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from worker.errors import StorageError
from worker.storage.sql.database import describe_error

log = logging.getLogger("worker.storage.sql.lock")

#: A worker locks first and records itself just after, so a refused worker gives the
#: holder this long to appear before it names no one.
OWNER_READ_TIMEOUT_S = 2.0
#: A recorded owner is a few hundred bytes; reading stops here whatever a file holds.
MAX_OWNER_BYTES = 4096
_POLL_S = 0.05


@dataclass(frozen=True)
class LockOwner:
    """The worker holding a state database, as a refused worker reports it."""

    pid: int
    host: str
    #: The holder's advertised REST URL (``rest.advertised.*``, else its listener).
    url: str
    #: When it took the lock (seconds since the epoch): about when it started.
    since: float

    @classmethod
    def this_process(cls, url: str) -> LockOwner:
        return cls(os.getpid(), socket.gethostname(), url, time.time())

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> LockOwner | None:
        """The owner a lock file records; None for anything else (empty, half written)."""
        try:
            data: Any = json.loads(text)
            owner = cls(int(data["pid"]), str(data["host"]), str(data["url"]),
                        float(data["since"]))
        except (ValueError, TypeError, KeyError):
            return None
        return owner

    def describe(self) -> str:
        """``PID 1234, REST http://host:8083, since 2025-01-31T10:00:00+01:00``; the host
        is named when it is not this one."""
        where = (f"PID {self.pid}" if self.host == socket.gethostname()
                 else f"PID {self.pid} on host {self.host}")
        return f"{where}, REST {self.url}, since {format_time(self.since)}"

    def is_gone(self) -> bool:
        """True only for a process of this host that no longer exists (a stale record)."""
        if self.host != socket.gethostname() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False  # EPERM: it exists, as another user
        return False


def format_time(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s).astimezone().isoformat(timespec="seconds")


class StateInUseError(StorageError):
    """Another standalone worker holds the state database: this one must not start."""

    def __init__(self, database: str, owner: LockOwner | None, remedy: str,
                 detail: str = "") -> None:
        holder = "another standalone worker"
        if owner is not None:
            holder += f" ({owner.describe()})"
        super().__init__(f"The state database {database} is in use by {holder}{detail}. "
                         f"Stop it, or give this worker its own state: {remedy}.")
        self.database = database
        self.owner = owner


class StateLock(ABC):
    """The lock on one state database, held from its ``acquire`` to ``release()``."""

    #: The database's URL, password masked.
    database: str
    #: How it is held, for the log line: "lock file /var/lib/connect/connect.db.worker.lock".
    how: str

    @abstractmethod
    def release(self) -> None:
        """Let another worker take the database. Idempotent; never raises."""


class KeptStateLock(StateLock):
    """A lock a ``Keeper`` keeps (renews or checks) in a database: what releasing one takes,
    once. Subclasses set ``_keeper`` and give up their hold in ``_give_up`` (under
    ``_guard``), then let go of their connections in ``_dispose``."""

    def __init__(self, database: str, how: str) -> None:
        self.database = database
        self.how = how
        self._released = False
        self._guard = threading.Lock()
        self._keeper: Keeper

    @abstractmethod
    def _give_up(self) -> None:
        """Remove what records and holds the lock (SQLAlchemyError is logged)."""

    @abstractmethod
    def _dispose(self) -> None:
        """Close what holding the lock used."""

    def release(self) -> None:
        self._keeper.stop()
        with self._guard:
            if self._released:
                return
            self._released = True
            try:
                self._give_up()
            except SQLAlchemyError as exc:  # the hold then ends on its own
                log.warning("Releasing the state database %s: %s", self.database,
                            describe_error(exc))
            finally:
                self._dispose()
        log.info("Released the state database %s", self.database)


class NoStateLock(StateLock):
    """In-memory SQLite: private to this process, so there is nothing to share or lock."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.how = "no lock: an in-memory database is private to this process"

    def release(self) -> None:
        pass


class Keeper:
    """A daemon thread calling ``keep()`` every ``interval_s`` until ``stop()``: renews a
    lease, or checks that the connection holding an advisory lock is alive."""

    def __init__(self, name: str, interval_s: float, keep: Callable[[], None]) -> None:
        self._interval_s = interval_s
        self._keep = keep
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stopping.wait(self._interval_s):
            try:
                self._keep()
            except Exception:  # the thread must outlive any one failure
                log.exception("Keeping the lock on the state database failed")


def lock_engine(url: URL, database: str) -> Engine:
    """An engine for the lock alone: no pool, so each connection is made where it is used
    (the keeper's thread) and nothing idles in a pool."""
    try:
        return create_engine(url, poolclass=NullPool, hide_parameters=True)
    except (SQLAlchemyError, ImportError) as exc:
        raise StorageError(f"Cannot open SQL storage at {database}: {exc}") from exc


def poll_until(deadline: float) -> bool:
    """Sleep one poll interval unless ``deadline`` (monotonic) passed; False once it has."""
    if time.monotonic() >= deadline:
        return False
    time.sleep(_POLL_S)
    return True

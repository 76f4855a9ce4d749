"""One standalone worker per state database: a lock held from start to stop.

Why: the standalone worker stores its connectors, so a second worker on the same database
(a copied ``worker.properties``) would run every stored connector a second time: sinks
write each record twice, the consumer groups churn. Kafka's standalone worker keeps its
connectors in memory and does not lock its offsets file; this one refuses instead. The
composition root takes the lock before the worker reaches Kafka or binds a port, and
``Connect.stop()`` releases it; a second worker gets ``StateInUseError`` naming the first
(PID, REST URL, since when) and the setting to change.

How, by database (``storage.sql.url``):

* SQLite: ``flock`` on ``<database>.worker.lock`` (``file``), dropped by the kernel when
  the process dies, ``kill -9`` included;
* PostgreSQL: a session advisory lock on a connection of its own (``advisory``), dropped
  by the server when that session ends;
* any other database: a lease row renewed every 10 s and taken over 30 s after its holder
  stopped renewing it (``lease``);
* in-memory SQLite: nothing, a database private to the process.

Tools that only read a database (tests, scripts) open ``SqlDatabase`` without the lock.
"""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from worker.errors import StorageError
from worker.storage.sql.database import masked_url
from worker.storage.sql.lock.advisory import AdvisoryStateLock
from worker.storage.sql.lock.base import LockOwner, NoStateLock, StateInUseError, StateLock, log
from worker.storage.sql.lock.file import FileStateLock, lock_path
from worker.storage.sql.lock.lease import LeaseStateLock

__all__ = ["LockOwner", "StateInUseError", "StateLock", "acquire_state_lock", "lock_path"]


def acquire_state_lock(url: str, *, rest_url: str) -> StateLock:
    """Lock the state database at ``url`` for this worker, whose advertised REST URL is
    ``rest_url``. StateInUseError if another worker holds it; StorageError if it cannot be
    locked at all (bad URL, no driver, unreachable server, unwritable directory)."""
    try:
        parsed: URL = make_url(url)
    except ArgumentError as exc:
        raise StorageError("Invalid SQL storage URL") from exc
    database = masked_url(parsed)
    owner = LockOwner.this_process(rest_url)
    backend = parsed.get_backend_name()
    lock: StateLock
    if backend == "sqlite":
        path = lock_path(parsed)
        lock = (NoStateLock(database) if path is None
                else FileStateLock.acquire(path, owner, database))
    elif backend == "postgresql":
        lock = AdvisoryStateLock.acquire(parsed, owner, database)
    else:
        lock = LeaseStateLock.acquire(parsed, owner, database)
    log.info("This worker holds the state database %s (%s)", database, lock.how)
    return lock

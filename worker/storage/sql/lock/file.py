"""SQLite: an exclusive ``flock`` on a file beside the database, held for the worker's life.

Why a file of its own (``<database>.worker.lock``) rather than the database file: SQLite
locks the database with POSIX record locks, which belong to the process and which any
``close()`` of any descriptor of that file drops, so a second descriptor on it in the
worker is a hazard; and the holder must record itself somewhere. ``flock`` locks are
independent of SQLite's (on Linux, also over NFS, where they become whole-file record
locks of this other file). They belong to the open file description: a second open of the
file and ``flock`` conflicts even in the same process. The kernel drops the lock when the
process dies however it dies (``kill -9`` included) -- the file's descriptor is close-on-
exec, so no child process inherits it.

The file stays when the worker stops (emptied): removing it would let a worker that had
opened it just before lock a file no longer in the directory while a third one creates
and locks a new one. What it records is only believed while it is locked, and a record of
a process gone from this host is taken for one not written yet, so a file left by a killed
worker never misleads.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from sqlalchemy.engine import URL

from worker.errors import StorageError
from worker.storage.sql.database import is_sqlite_memory
from worker.storage.sql.lock.base import (
    MAX_OWNER_BYTES,
    OWNER_READ_TIMEOUT_S,
    LockOwner,
    StateInUseError,
    StateLock,
    log,
    poll_until,
)

LOCK_SUFFIX = ".worker.lock"
REMEDY = "set storage.sql.url (or offset.storage.file.filename) to another file"


def lock_path(url: URL) -> Path | None:
    """The lock file of a SQLite URL's database (symbolic links resolved, so every name of
    one database finds one lock); None for an in-memory database."""
    if is_sqlite_memory(url):
        return None
    database = url.database or ""
    if database.startswith("file:"):  # a URI filename (?uri=true)
        database = unquote(urlsplit(database).path)
        if not database:
            return None
    real = Path(os.path.realpath(database))
    return real.with_name(real.name + LOCK_SUFFIX)


class FileStateLock(StateLock):
    """The ``flock`` of one SQLite database's lock file."""

    def __init__(self, path: Path, fd: int, database: str) -> None:
        self.path = path
        self.database = database
        self.how = f"lock file {path}"
        self._fd = fd
        self._guard = threading.Lock()

    @classmethod
    def acquire(cls, path: Path, owner: LockOwner, database: str,
                owner_timeout_s: float = OWNER_READ_TIMEOUT_S) -> FileStateLock:
        """Lock ``path`` and record ``owner`` in it; StateInUseError naming the holder if
        another worker has it, StorageError if the file cannot be opened or locked."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise StorageError(f"Cannot open the lock file {path} of the state database "
                               f"{database}: {exc.strerror}") from exc
        try:
            locked, holder = _lock_or_holder(fd, path, owner_timeout_s)
            if not locked:
                raise StateInUseError(database, holder, REMEDY,
                                      "" if holder else f" (see {path})")
            record = owner.to_json().encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, record, 0)
        except OSError as exc:
            os.close(fd)
            raise StorageError(f"Cannot lock the state database {database} with {path}: "
                               f"{exc.strerror}") from exc
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, database)

    def release(self) -> None:
        with self._guard:
            fd, self._fd = self._fd, -1
        if fd < 0:
            return
        try:
            os.ftruncate(fd, 0)  # no owner recorded once it stopped
        except OSError as exc:
            log.debug("Could not empty %s: %s", self.path, exc.strerror)
        finally:
            os.close(fd)  # drops the flock
        log.info("Released the state database %s", self.database)


def _lock_or_holder(fd: int, path: Path, timeout_s: float) -> tuple[bool, LockOwner | None]:
    """(True, None) once ``fd`` holds the lock; else (False, the holder it records, or
    None if none was readable within ``timeout_s``). A holder that stops meanwhile leaves
    the lock to us."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True, None
        except BlockingIOError:
            pass
        holder = LockOwner.from_json(os.pread(fd, MAX_OWNER_BYTES, 0))
        if holder is not None and not holder.is_gone():
            return False, holder
        if not poll_until(deadline):
            log.debug("%s is locked but names no running owner", path)
            return False, None

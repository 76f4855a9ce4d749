"""The standalone worker's lock on its state database (worker/storage/sql/lock): SQLite's
lock file, the lease other databases get (run here on SQLite), the refusal's message.

PostgreSQL's advisory lock runs against a real server in test_state_lock_postgres.py.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.engine import make_url

from tests.support import wait_until
from tests.unit.worker.storage._lock_holder import (
    FIRST_URL,
    HOLDER_URL,
    lock_holder,
    second_refused,
)
from worker.errors import StorageError
from worker.storage.sql.database import masked_url
from worker.storage.sql.lock import StateInUseError, acquire_state_lock, lock_path
from worker.storage.sql.lock.base import LockOwner, NoStateLock
from worker.storage.sql.lock.file import FileStateLock
from worker.storage.sql.lock.lease import LeaseStateLock
from worker.storage.sql.schema import state_lock

REST = FIRST_URL


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'state' / 'connect.db'}"


def owner(rest_url: str = REST) -> LockOwner:
    return LockOwner.this_process(rest_url)


def dead_pid() -> int:
    """The PID of a process that has exited (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(10)
    return child.pid


# --- SQLite: the lock file ---------------------------------------------------------------

def test_second_lock_in_one_process_is_refused_naming_the_first(url: str) -> None:
    # flock locks belong to the open file description: a second open + flock conflicts
    # even in the process holding the first.
    refused = second_refused(url, FileStateLock)
    message = str(refused)
    assert message.startswith(f"The state database {url} is in use by another standalone "
                              f"worker (PID {os.getpid()}, REST {REST}, since ")
    assert message.endswith("Stop it, or give this worker its own state: set storage.sql.url "
                            "(or offset.storage.file.filename) to another file.")
    assert refused.owner is not None and refused.owner.url == REST


def test_release_lets_the_next_worker_in_and_leaves_an_empty_file(url: str) -> None:
    first = acquire_state_lock(url, rest_url=REST)
    assert isinstance(first, FileStateLock)
    recorded = LockOwner.from_json(first.path.read_bytes())
    assert recorded is not None and (recorded.pid, recorded.url) == (os.getpid(), REST)
    first.release()
    first.release()  # idempotent
    assert first.path.read_bytes() == b""  # a stopped worker is named nowhere
    second = acquire_state_lock(url, rest_url="http://worker-b.example:8084")
    second.release()


def test_lock_file_sits_beside_the_database_whose_directory_is_created(tmp_path: Path
                                                                       ) -> None:
    database = tmp_path / "a" / "b" / "connect.db"
    lock = acquire_state_lock(f"sqlite:///{database}", rest_url=REST)
    try:
        assert isinstance(lock, FileStateLock)
        assert lock.path == database.with_name("connect.db.worker.lock")
        assert lock.path.is_file()
    finally:
        lock.release()


def test_every_name_of_one_database_finds_one_lock(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.chdir(tmp_path)
    first = acquire_state_lock(f"sqlite:///{real / 'connect.db'}", rest_url=REST)
    try:
        for other in ("sqlite:///real/connect.db", "sqlite:///link/connect.db",
                      f"sqlite:///file:{real / 'connect.db'}?uri=true&mode=rwc"):
            with pytest.raises(StateInUseError):
                acquire_state_lock(other, rest_url="http://b:1")
    finally:
        first.release()


def test_lock_path_of_each_kind_of_sqlite_url(tmp_path: Path) -> None:
    assert lock_path(make_url("sqlite://")) is None
    assert lock_path(make_url("sqlite:///:memory:")) is None
    assert lock_path(make_url("sqlite:///file::memory:?cache=shared&uri=true")) is None
    assert (lock_path(make_url(f"sqlite:///file:{tmp_path}/x.db?mode=rwc&uri=true"))
            == tmp_path / "x.db.worker.lock")
    assert lock_path(make_url(f"sqlite+pysqlite:///{tmp_path}/y.db")) == (
        tmp_path / "y.db.worker.lock")


def test_in_memory_database_is_not_locked() -> None:
    first = acquire_state_lock("sqlite://", rest_url=REST)
    second = acquire_state_lock("sqlite:///:memory:", rest_url=REST)
    assert isinstance(first, NoStateLock) and isinstance(second, NoStateLock)
    first.release()
    second.release()


def test_file_left_by_a_dead_worker_does_not_block_nor_confuse(url: str) -> None:
    path = lock_path(make_url(url))
    assert path is not None
    path.parent.mkdir(parents=True)
    stale = LockOwner(dead_pid(), owner().host, "http://dead.example:8083", time.time() - 60)
    path.write_text(stale.to_json())
    lock = acquire_state_lock(url, rest_url=REST)  # the file is there, unlocked: taken
    try:
        recorded = LockOwner.from_json(path.read_bytes())
        assert recorded is not None and recorded.url == REST
    finally:
        lock.release()


def test_locked_file_naming_a_dead_process_is_not_believed(url: str) -> None:
    # A worker that has just locked the file has not recorded itself yet: the file still
    # names the killed worker before it. The refusal must not name that one.
    path = lock_path(make_url(url))
    assert path is not None
    holder = FileStateLock.acquire(path, owner(), url)
    try:
        path.write_text(LockOwner(dead_pid(), owner().host, "http://dead.example:1",
                                  time.time()).to_json())
        with pytest.raises(StateInUseError) as refused:
            FileStateLock.acquire(path, owner("http://b:1"), url, owner_timeout_s=0.2)
    finally:
        holder.release()
    message = str(refused.value)
    assert "dead.example" not in message and "PID" not in message
    assert f"in use by another standalone worker (see {path})." in message
    assert refused.value.owner is None


def test_unwritable_directory_is_a_storage_error_naming_the_lock_file(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    with pytest.raises(StorageError, match=r"Cannot open the lock file .*not-a-directory"
                                            r"/connect\.db\.worker\.lock") as failed:
        acquire_state_lock(f"sqlite:///{blocker / 'connect.db'}", rest_url=REST)
    assert not isinstance(failed.value, StateInUseError)


def test_invalid_url_is_a_storage_error() -> None:
    with pytest.raises(StorageError, match="Invalid SQL storage URL"):
        acquire_state_lock("not a url", rest_url=REST)


# --- another process ---------------------------------------------------------------------

@pytest.fixture
def holder_process(url: str) -> Iterator[subprocess.Popen[str]]:
    """A process holding the lock on ``url`` until killed."""
    with lock_holder(url) as child:
        yield child


def test_lock_held_by_another_process_names_it_and_dies_with_it(
        url: str, holder_process: subprocess.Popen[str]) -> None:
    with pytest.raises(StateInUseError) as refused:
        acquire_state_lock(url, rest_url=REST)
    assert (f"(PID {holder_process.pid}, REST {HOLDER_URL}, since "
            in str(refused.value))
    holder_process.send_signal(signal.SIGKILL)  # no clean-up runs
    holder_process.wait(10)
    lock = acquire_state_lock(url, rest_url=REST)  # at once: the kernel dropped the lock
    lock.release()


# --- the message -------------------------------------------------------------------------

def test_refusal_masks_credentials_of_the_url() -> None:
    shown = masked_url(make_url("mysql+pymysql://connect:s3cret-pw@db:3306/state"
                                "?ssl_password=other-s3cret&charset=utf8mb4"))
    assert shown == ("mysql+pymysql://connect:***@db:3306/state"
                     "?charset=utf8mb4&ssl_password=***")
    error = StateInUseError(shown, owner(), "set storage.sql.url to another database")
    assert "s3cret" not in str(error)


def test_owner_on_another_host_is_named_with_its_host() -> None:
    other = LockOwner(42, "elsewhere.example", "https://elsewhere.example:8443", 0.0)
    assert other.describe().startswith("PID 42 on host elsewhere.example, REST "
                                       "https://elsewhere.example:8443, since 19")
    assert not other.is_gone()  # another host's PIDs are not this host's to judge


def test_owner_record_is_read_only_when_whole() -> None:
    me = owner()
    record = me.to_json()
    assert json.loads(record)["url"] == REST
    assert LockOwner.from_json(record) == me
    for partial in ("", record[: len(record) // 2], "[]", '{"pid": "x"}', "\x00" * 10):
        assert LockOwner.from_json(partial) is None


# --- the lease (databases without advisory locks), run on SQLite -------------------------

def lease(url: str, rest_url: str = REST, lease_s: float = 30.0) -> LeaseStateLock:
    return LeaseStateLock.acquire(make_url(url), owner(rest_url), url, lease_s)


def lease_row(url: str) -> dict[str, Any] | None:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            row = conn.execute(select(state_lock)).first()
            return None if row is None else dict(row._mapping)
    finally:
        engine.dispose()


def renewed_ms(url: str) -> int:
    row = lease_row(url)
    return 0 if row is None else int(row["renewed_ms"])


@pytest.fixture
def lease_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'lease.db'}"


def test_lease_refuses_a_second_worker_naming_the_first_and_when_it_ends(lease_url: str
                                                                         ) -> None:
    first = lease(lease_url)
    try:
        with pytest.raises(StateInUseError) as refused:
            lease(lease_url, "http://b:1")
    finally:
        first.release()
    message = str(refused.value)
    assert f"(PID {os.getpid()}, REST {REST}, since " in message
    assert "; if that worker is no longer running, its lease ends at " in message
    assert message.endswith("set storage.sql.url to another database (or schema).")
    assert lease_row(lease_url) is None  # released: the row is gone
    lease(lease_url, "http://b:1").release()


def test_lease_is_renewed_while_held(lease_url: str) -> None:
    first = lease(lease_url, lease_s=0.6)  # renewed every 0.2 s
    try:
        taken = renewed_ms(lease_url)
        assert taken > 0
        wait_until(lambda: renewed_ms(lease_url) > taken + 700, timeout=10,
                   message="the lease renewed past its first term")
        with pytest.raises(StateInUseError):  # renewed: not expired, though 0.6 s passed
            lease(lease_url, "http://b:1")
    finally:
        first.release()


def test_expired_lease_is_taken_over_and_its_old_holder_says_so(
        lease_url: str, caplog: pytest.LogCaptureFixture) -> None:
    first = lease(lease_url, lease_s=0.3)
    first._keeper.stop()  # a holder that stopped renewing (hung, or killed)
    row = lease_row(lease_url)
    assert row is not None
    expires_ms = int(row["renewed_ms"]) + int(row["lease_ms"])
    wait_until(lambda: time.time() * 1000 > expires_ms, timeout=5, interval=0.05,
               message="the first lease to end")
    with caplog.at_level(logging.WARNING, logger="worker.storage.sql.lock"):
        second = lease(lease_url, "http://b:1")
        try:
            assert "Took over the state database" in caplog.text
            first._keep()  # the old holder's next renewal finds the lease taken
            errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
            assert len(errors) == 1 and "REST http://b:1" in errors[0]
            first._keep()
            assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 1
        finally:
            second.release()
            first.release()

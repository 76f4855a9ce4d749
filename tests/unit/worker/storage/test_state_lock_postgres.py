"""The standalone worker's lock on a PostgreSQL state database (an advisory lock), against a
real server started for this module (``postgres_server``; skipped without the server
binaries or the psycopg driver)."""

from __future__ import annotations

import itertools
import logging
import os
import re
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, insert, select, text
from sqlalchemy.engine import make_url

from tests.support import wait_until
from tests.unit.worker.storage._lock_holder import (
    FIRST_URL,
    HOLDER_URL,
    lock_holder,
    second_refused,
)
from tests.unit.worker.storage.postgres_server import postgres_server
from worker.errors import StorageError
from worker.storage.sql.lock import StateInUseError, acquire_state_lock
from worker.storage.sql.lock.advisory import AdvisoryStateLock, advisory_key
from worker.storage.sql.lock.base import LockOwner
from worker.storage.sql.lock.lease import LeaseStateLock
from worker.storage.sql.schema import state_lock

REST = FIRST_URL
_databases = itertools.count(1)


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture
def url(server_url: str) -> Iterator[str]:
    """A database of its own for each test (advisory locks are per database)."""
    name = f"state_{os.getpid()}_{next(_databases)}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        yield str(make_url(server_url).set(database=name).render_as_string(False))
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
    finally:
        admin.dispose()


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    """The test's own connections to the database (to look at it, or to break things)."""
    created = create_engine(url, isolation_level="AUTOCOMMIT")
    yield created
    created.dispose()


def advisory(url: str, rest_url: str = REST, **kwargs: float) -> AdvisoryStateLock:
    return AdvisoryStateLock.acquire(make_url(url), LockOwner.this_process(rest_url), url,
                                     **kwargs)


def test_second_worker_is_refused_naming_the_first(url: str) -> None:
    message = str(second_refused(url, AdvisoryStateLock))
    assert message.startswith(f"The state database {url} is in use by another standalone "
                              f"worker (PID {os.getpid()}, REST {REST}, since ")
    assert message.endswith("Stop it, or give this worker its own state: set "
                            "storage.sql.url to another database (or schema).")


def test_password_of_the_url_never_shows(url: str) -> None:
    with_password = str(make_url(url).set(password="s3cret-pw").render_as_string(False))
    first = acquire_state_lock(with_password, rest_url=REST)  # trust auth ignores it
    try:
        with pytest.raises(StateInUseError) as refused:
            acquire_state_lock(with_password, rest_url="http://b:1")
    finally:
        first.release()
    assert "s3cret-pw" not in str(refused.value)
    assert ":***@127.0.0.1" in str(refused.value)


def test_release_lets_the_next_worker_in_and_removes_the_record(url: str, engine: Engine
                                                                ) -> None:
    first = advisory(url)
    with engine.connect() as conn:
        row = conn.execute(select(state_lock)).one()
    assert (row.pid, row.url) == (os.getpid(), REST)
    first.release()
    first.release()  # idempotent
    with engine.connect() as conn:
        assert conn.execute(select(state_lock)).first() is None
    advisory(url, "http://b:1").release()


def test_another_schema_is_another_state(url: str, engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(text("CREATE SCHEMA other"))
    other = str(make_url(url).update_query_dict({"options": "-csearch_path=other"})
                .render_as_string(False))
    first = advisory(url)
    try:
        second = advisory(other, "http://b:1")
        with pytest.raises(StateInUseError):
            advisory(other, "http://c:1")
        second.release()
    finally:
        first.release()


def test_killed_holder_leaves_nothing_behind(url: str) -> None:
    with lock_holder(url) as child:
        with pytest.raises(StateInUseError, match=rf"\(PID {child.pid}, REST "
                                                  rf"{re.escape(HOLDER_URL)}, since "):
            advisory(url)
        child.kill()  # SIGKILL: no clean-up runs; the server ends its session
        child.wait(10)

    def taken() -> AdvisoryStateLock | None:
        try:
            return advisory(url, owner_timeout_s=0)
        except StateInUseError:
            return None
    lock = wait_until(taken, timeout=15, message="the killed holder's session to end")
    assert lock is not None
    lock.release()


def test_record_of_a_dead_session_neither_blocks_nor_is_named(url: str, engine: Engine
                                                              ) -> None:
    # A killed worker's row stays; the next worker takes the lock and its own row.
    first = advisory(url)
    first.release()
    with engine.connect() as conn:
        conn.execute(insert(state_lock).values(
            name="standalone", holder="1", pid=1, host="dead.example", url="http://dead:1",
            since_ms=0, renewed_ms=0, lease_ms=0))
    lock = advisory(url)
    try:
        with engine.connect() as conn:
            assert conn.execute(select(state_lock.c.url)).scalar_one() == REST
    finally:
        lock.release()
    # The key held by a session that recorded nothing (a worker between its lock and its
    # record): the stale row is not believed.
    with engine.connect() as conn:
        conn.execute(insert(state_lock).values(
            name="standalone", holder="1", pid=1, host="dead.example", url="http://dead:1",
            since_ms=0, renewed_ms=0, lease_ms=0))
        schema = conn.scalar(text("SELECT current_schema()"))
        assert conn.scalar(text("SELECT pg_try_advisory_lock(:k)"),
                           {"k": advisory_key(str(schema))})
        with pytest.raises(StateInUseError) as refused:
            advisory(url, owner_timeout_s=0.3)
    assert refused.value.owner is None
    assert "dead" not in str(refused.value)


def test_lock_lost_with_its_connection_is_taken_again(
        url: str, engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="worker.storage.sql.lock")
    lock = advisory(url, keep_interval_s=0.1)
    try:
        with engine.connect() as conn:
            backend = conn.execute(select(state_lock.c.holder)).scalar_one()
            assert conn.scalar(text("SELECT pg_terminate_backend(:pid)"), {"pid": int(backend)})
        wait_until(lambda: "Holding the state database" in caplog.text, timeout=10,
                   message="the keeper to take the lock again")
        assert "failed" in caplog.text  # the WARNING that it broke
        with pytest.raises(StateInUseError):
            advisory(url, "http://b:1")
    finally:
        lock.release()


def test_lock_taken_by_another_worker_meanwhile_is_an_error_logged_once(
        url: str, engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    first = advisory(url, keep_interval_s=3600)  # the test runs its keeper by hand
    try:
        with engine.connect() as conn:
            backend = conn.execute(select(state_lock.c.holder)).scalar_one()
            conn.scalar(text("SELECT pg_terminate_backend(:pid)"), {"pid": int(backend)})
        second = wait_until(lambda: _try(url, "http://worker-b.example:8084"), timeout=10,
                            message="the first session to end")
        assert second is not None
        try:
            with caplog.at_level(logging.INFO, logger="worker.storage.sql.lock"):
                first._keep()
                first._keep()
            errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
            assert len(errors) == 1
            assert errors[0].startswith(f"Lost the lock on the state database {url} with "
                                        "its connection, and another standalone worker took "
                                        "it (PID ")
            assert "REST http://worker-b.example:8084" in errors[0]
        finally:
            second.release()
    finally:
        first.release()


def _try(url: str, rest_url: str) -> AdvisoryStateLock | None:
    try:
        return advisory(url, rest_url, owner_timeout_s=0)
    except StateInUseError:
        return None


def test_unreachable_server_is_a_storage_error(url: str) -> None:
    closed = make_url(url).set(port=1, query={"connect_timeout": "2"})
    with pytest.raises(StorageError, match="Cannot lock the state database") as failed:
        acquire_state_lock(str(closed.render_as_string(False)), rest_url=REST)
    assert not isinstance(failed.value, StateInUseError)


def test_lease_works_on_a_server_database(url: str) -> None:
    first = LeaseStateLock.acquire(make_url(url), LockOwner.this_process(REST), url)
    try:
        with pytest.raises(StateInUseError, match=r"its lease ends at"):
            LeaseStateLock.acquire(make_url(url), LockOwner.this_process("http://b:1"), url)
    finally:
        first.release()
    LeaseStateLock.acquire(make_url(url), LockOwner.this_process("http://b:1"), url).release()

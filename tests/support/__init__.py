"""Shared test helpers: condition polling and worker subprocesses.

Tests wait for conditions with :func:`wait_until` (a deadline and a poll interval), never
with bare sleeps; :func:`wait_for_connector_state` is the common case of waiting on
``GET /connectors/{name}/status``.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from worker.testing import WorkerProcess, WorkerStartError, write_properties

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

__all__ = [
    "NO_JAVA",
    "WaitTimeout",
    "WorkerProcess",
    "WorkerStartError",
    "create_topic",
    "unique_name",
    "wait_for_connector_state",
    "wait_until",
    "write_properties",
]

T = TypeVar("T")

#: Why Spark tests skip on a machine without a JVM, or ``None`` when one is there.
NO_JAVA = (None if shutil.which("java") or os.environ.get("JAVA_HOME")
           else "Spark needs Java: no `java` on PATH and JAVA_HOME is unset")


class WaitTimeout(AssertionError):
    """A condition polled by :func:`wait_until` did not hold before its deadline.

    An ``AssertionError`` so that pytest reports it as a test failure, not an error.
    """


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 30.0,
    interval: float = 0.2,
    message: str | Callable[[], str] = "condition",
    *,
    ignore: tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``predicate`` every ``interval`` seconds until it returns a truthy value.

    Returns that value. After ``timeout`` seconds raises :class:`WaitTimeout` naming
    ``message`` (a string, or a callable evaluated at failure time for context such as a
    log tail) with the last value seen. Exceptions of the types in ``ignore`` count as
    "not yet" (the last one is reported on timeout); any other exception propagates.
    The predicate is always called at least once, and once more at the deadline.
    """
    deadline = time.monotonic() + timeout
    last_value: Any = None
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
        except ignore as exc:
            last_error = exc
        else:
            last_error = None
            if value:
                return value
            last_value = value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(interval, remaining))
    text = message() if callable(message) else message
    detail = (
        f"last error: {type(last_error).__name__}: {last_error}"
        if last_error is not None
        else f"last value: {last_value!r}"
    )
    raise WaitTimeout(f"timed out after {timeout:g}s waiting for {text} ({detail})")


def _connector_status(client: httpx.Client, name: str) -> dict[str, Any] | None:
    response = client.get(f"/connectors/{name}/status")
    if response.status_code == 404:
        return None
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


def wait_for_connector_state(
    client: httpx.Client,
    name: str,
    state: str,
    tasks_state: str | None = None,
    timeout: float = 60.0,
    *,
    task_count: int | None = None,
    interval: float = 0.25,
) -> dict[str, Any]:
    """Poll ``GET /connectors/{name}/status`` until the connector is in ``state``.

    With ``tasks_state``, every task must be in it too and there must be at least one
    task (exactly ``task_count`` tasks when given). A 404 (connector not there yet) and
    connection errors (worker restarting) count as "not yet". Returns the status body;
    on timeout the :class:`WaitTimeout` message includes the last body, whose ``trace``
    fields explain a ``FAILED`` state.
    """
    last: dict[str, Any] | None = None

    def check() -> dict[str, Any] | None:
        nonlocal last
        status = _connector_status(client, name)
        last = status
        if status is None or status.get("connector", {}).get("state") != state:
            return None
        if tasks_state is None and task_count is None:
            return status
        tasks = status.get("tasks", [])
        if task_count is not None and len(tasks) != task_count:
            return None
        if tasks_state is not None and (
            not tasks or any(t.get("state") != tasks_state for t in tasks)
        ):
            return None
        return status

    wanted = f"connector {name!r} {state}"
    if tasks_state is not None:
        wanted += f" with tasks {tasks_state}"
    if task_count is not None:
        wanted += f" ({task_count} tasks)"
    result = wait_until(
        check,
        timeout=timeout,
        interval=interval,
        message=lambda: f"{wanted}; last status: {last!r}",
        ignore=(httpx.TransportError,),
    )
    assert result is not None
    return result


def unique_name(prefix: str = "t") -> str:
    """A topic/connector/group name that no other test (or earlier run) uses.

    ``prefix`` is reduced to the characters Kafka allows in topic names and shortened so
    that the result stays readable in logs; a random suffix makes it unique.
    """
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", prefix).strip("-.") or "t"
    return f"{clean[:60]}-{uuid.uuid4().hex[:8]}"


def create_topic(
    admin: AdminClient,
    name: str,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
    *,
    timeout: float = 30.0,
) -> str:
    """Create topic ``name`` (replication factor 1) and wait until metadata shows it.

    Returns ``name``. Raises the broker's error if creation fails.
    """
    from confluent_kafka.admin import NewTopic

    futures = admin.create_topics(
        [NewTopic(name, partitions, 1, config=dict(config or {}))],
        operation_timeout=timeout,
        request_timeout=timeout,
    )
    futures[name].result(timeout=timeout)

    def visible() -> bool:
        topic = admin.list_topics(topic=name, timeout=5).topics.get(name)
        return topic is not None and topic.error is None and len(topic.partitions) == partitions

    wait_until(visible, timeout=timeout, message=f"topic {name!r} in metadata")
    return name

"""The provider's REST hooks (sync and async) against a real ``connect-standalone`` worker.

A FileStreamSource connector goes through the whole life an Airflow DAG can give it, every
call made with the hooks and every wait bounded: create (twice: the second is a
ConnectorAlreadyExistsError), config get/put/patch, status and tasks, pause/resume, the
KIP-875 runbook (stop → get/alter/reset offsets → resume), restarts, active topics and
their reset, plugins and validation, loggers, health and server info, delete (then 404s).
The connector's name has spaces and URL-reserved characters, so every path is quoted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider.exceptions import (
    BadRequestError,
    ConnectorAlreadyExistsError,
    ForbiddenError,
    NotFoundError,
)
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.hooks.kafka_connect_async import KafkaConnectAsyncHook
from airflow_provider.hooks.results import (
    ConnectorInfo,
    ConnectorOffset,
    ConnectorOffsets,
    ConnectorStatus,
    Message,
    TaskId,
)
from tests.support import WorkerProcess, create_topic, unique_name, wait_until

pytestmark = pytest.mark.integration

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
WORKER_PROPS = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
LINES = ["alpha", "beta", "gamma"]
WAIT_S = 60.0


def _matches(status: ConnectorStatus | None, state: str, tasks_state: str | None,
             task_count: int | None) -> bool:
    if status is None or status.state != state:
        return False
    tasks = status.tasks
    if task_count is not None and len(tasks) != task_count:
        return False
    return tasks_state is None or bool(tasks) and all(t.state == tasks_state for t in tasks)


def wait_for_state(hook: KafkaConnectHook, name: str, state: str,
                   tasks_state: str | None = None, *, task_count: int | None = None
                   ) -> ConnectorStatus:
    last: ConnectorStatus | None = None

    def check() -> ConnectorStatus | None:
        nonlocal last
        last = hook.get_connector_status(name)
        return last if _matches(last, state, tasks_state, task_count) else None

    return wait_until(check, timeout=WAIT_S, ignore=(NotFoundError,),
                      message=lambda: f"{name!r} {state}/{tasks_state}; last {last}")


async def await_state(hook: KafkaConnectAsyncHook, name: str, state: str,
                      tasks_state: str | None = None, *, task_count: int | None = None
                      ) -> ConnectorStatus:
    deadline = time.monotonic() + WAIT_S
    last: ConnectorStatus | None = None
    while time.monotonic() < deadline:
        try:
            last = await hook.get_connector_status(name)
        except NotFoundError:
            last = None
        if last is not None and _matches(last, state, tasks_state, task_count):
            return last
        await asyncio.sleep(0.25)
    raise AssertionError(f"{name!r} never reached {state}/{tasks_state}; last {last}")


def file_source(tmp_path: Path, kafka_admin: Any, label: str) -> tuple[Path, str, dict[str, str]]:
    source = tmp_path / f"{label}.txt"
    source.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    topic = create_topic(kafka_admin, unique_name(label))
    return source, topic, {"connector.class": "FileStreamSource", "file": str(source),
                           "topic": topic, "tasks.max": "1"}


def committed(source: Path) -> list[dict[str, Any]]:
    """The offsets of a FileStreamSource that has read all of ``source``."""
    return [{"partition": {"filename": str(source)},
             "offset": {"position": source.stat().st_size}}]


def offsets_of(offsets: ConnectorOffsets) -> list[dict[str, Any]]:
    return offsets.to_list()


@pytest.fixture
def worker(standalone_worker: Callable[..., WorkerProcess],
           kafka_connect_conn: Callable[..., str]) -> WorkerProcess:
    started = standalone_worker(WORKER_PROPS)
    kafka_connect_conn(host=started.url)
    return started


def test_sync_hook_drives_a_connector_through_its_life(worker: WorkerProcess, tmp_path: Path,
                                                       kafka_admin: Any) -> None:
    source, topic, config = file_source(tmp_path, kafka_admin, "sync-src")
    name = f"hook life?cycle #{unique_name('sync')} 100%"
    with KafkaConnectHook(retry_limit=3, retry_delay=0.2) as hook:
        # --- the worker
        info = hook.get_server_info()
        assert info.version and {"commit", "kafka_cluster_id"} <= set(info.to_dict())
        assert hook.get_health().status == "healthy"
        plugins = hook.list_connector_plugins()
        assert any(p.class_name.endswith("FileStreamSourceConnector") and p.type == "source"
                   for p in plugins)
        assert len(hook.list_connector_plugins(connectors_only=False)) > len(plugins)
        assert any(c["name"] == "file" for c in hook.get_plugin_config("FileStreamSource"))
        valid = hook.validate_connector_config("FileStreamSource", {**config, "name": name})
        assert valid.error_count == 0 and valid.errors == [], valid
        bad = hook.validate_connector_config(
            "FileStreamSource", {"connector.class": "FileStreamSource", "tasks.max": "many"})
        assert bad.error_count > 0 and any(e.startswith("tasks.max: ") for e in bad.errors)

        # --- create, inspect, reconfigure
        created = hook.create_connector(name, config)
        assert isinstance(created, ConnectorInfo)
        assert created.name == name and created.config["file"] == str(source)
        with pytest.raises(ConnectorAlreadyExistsError):
            hook.create_connector(name, config)
        wait_for_state(hook, name, "RUNNING", "RUNNING", task_count=1)
        assert name in hook.list_connectors()
        expanded = hook.list_connectors(expand=("status", "info"))
        assert expanded[name]["info"]["type"] == "source"
        assert hook.get_connector(name).tasks == (TaskId(name, 0),)
        assert hook.get_connector_config(name) == {**config, "name": name}
        updated = hook.put_connector_config(name, {**config, "batch.size": "100"})
        assert updated.config["batch.size"] == "100"
        patched = hook.patch_connector_config(name, {"batch.size": None})
        assert "batch.size" not in patched.config
        wait_for_state(hook, name, "RUNNING", "RUNNING", task_count=1)
        tasks = hook.list_tasks(name)
        assert [t.id for t in tasks] == [TaskId(name, 0)]
        assert hook.get_task_status(name, 0).state == "RUNNING"
        with pytest.raises(NotFoundError):
            hook.get_task_status(name, 7)

        # --- active topics (KIP-558)
        wait_until(lambda: hook.get_connector_topics(name) == [topic], timeout=WAIT_S,
                   message="the source's topic to be active")
        assert hook.reset_connector_topics(name) is None
        assert hook.get_connector_topics(name) == []  # no new lines: nothing re-records it

        # --- pause / resume
        assert hook.pause_connector(name) is None
        wait_for_state(hook, name, "PAUSED", "PAUSED", task_count=1)
        assert hook.resume_connector(name) is None
        wait_for_state(hook, name, "RUNNING", "RUNNING", task_count=1)

        # --- KIP-875: stop → offsets → resume
        wait_until(lambda: offsets_of(hook.get_offsets(name)) == committed(source),
                   timeout=WAIT_S, message="the whole file's offset to be committed")
        with pytest.raises(BadRequestError):  # offsets change only while STOPPED
            hook.reset_offsets(name)
        assert hook.stop_connector(name) is None
        wait_for_state(hook, name, "STOPPED", task_count=0)
        assert hook.get_offsets(name).to_dict() == {"offsets": committed(source)}
        rewound = [{"partition": {"filename": str(source)},
                    "offset": {"position": len(f"{LINES[0]}\n")}}]
        altered = hook.alter_offsets(name, rewound)
        assert isinstance(altered, Message) and "altered" in altered.message
        assert hook.get_offsets(name) == ConnectorOffsets((ConnectorOffset(
            {"filename": str(source)}, {"position": len(f"{LINES[0]}\n")}),))
        assert "reset" in hook.reset_offsets(name).message
        assert hook.get_offsets(name).to_dict() == {"offsets": []}
        hook.resume_connector(name)
        wait_for_state(hook, name, "RUNNING", "RUNNING", task_count=1)
        # From scratch: the whole file is read again and its topic recorded again.
        wait_until(lambda: offsets_of(hook.get_offsets(name)) == committed(source),
                   timeout=WAIT_S, message="the file to be read again after the reset")
        wait_until(lambda: hook.get_connector_topics(name) == [topic], timeout=WAIT_S,
                   message="the topic to be recorded again")

        # --- restarts
        assert hook.restart_connector(name) is None
        restarted = hook.restart_connector(name, include_tasks=True)
        assert isinstance(restarted, ConnectorStatus)
        assert restarted.name == name and restarted.state
        assert hook.restart_task(name, 0) is None
        wait_for_state(hook, name, "RUNNING", "RUNNING", task_count=1)

        # --- loggers (KIP-495)
        assert "root" in hook.list_loggers()
        changed = hook.set_logger_level("worker.rest", "DEBUG")
        assert "worker.rest" in changed
        assert hook.get_logger("worker.rest")["level"] == "DEBUG"
        assert hook.set_logger_level("worker.rest", "INFO", scope="cluster") is None
        with pytest.raises(NotFoundError):
            hook.set_logger_level("worker.rest", "LOUD")

        # --- delete
        assert hook.delete_connector(name) is None
        for call in (hook.get_connector, hook.get_connector_status, hook.delete_connector):
            with pytest.raises(NotFoundError):
                call(name)
        assert name not in hook.list_connectors()


def test_async_hook_drives_a_connector_through_its_life(worker: WorkerProcess, tmp_path: Path,
                                                        kafka_admin: Any) -> None:
    source, topic, config = file_source(tmp_path, kafka_admin, "async-src")
    name = f"async hook {unique_name('async')}"

    async def scenario() -> None:
        async with KafkaConnectAsyncHook(retry_limit=3, retry_delay=0.2) as hook:
            assert (await hook.aget_settings()).base_url == worker.url
            assert (await hook.get_server_info()).version
            assert (await hook.get_health()).status == "healthy"
            # Asked of one worker by its absolute URL (the plugin-sync wait does so).
            listed = await hook.list_connector_plugins(connectors_only=False,
                                                       worker_url=worker.url)
            assert {"source", "sink", "converter", "transformation"} <= {
                p.type for p in listed}
            assert all(p.version for p in listed)
            bad = await hook.validate_connector_config(
                "FileStreamSource", {"connector.class": "FileStreamSource", "tasks.max": "x"})
            assert bad.error_count > 0
            with pytest.raises(BadRequestError):  # no connector.class: not even validated
                await hook.validate_connector_config("FileStreamSource", {"tasks.max": "1"})

            await hook.create_connector(name, config)
            with pytest.raises(ConnectorAlreadyExistsError):
                await hook.create_connector(name, config)
            await await_state(hook, name, "RUNNING", "RUNNING", task_count=1)
            assert (await hook.get_connector_config(name))["topic"] == topic
            assert (await hook.list_tasks(name))[0].id.task == 0

            await hook.pause_connector(name)
            await await_state(hook, name, "PAUSED", "PAUSED", task_count=1)
            await hook.resume_connector(name)
            await await_state(hook, name, "RUNNING", "RUNNING", task_count=1)

            for _ in range(int(WAIT_S * 4)):
                if offsets_of(await hook.get_offsets(name)) == committed(source):
                    break
                await asyncio.sleep(0.25)
            assert offsets_of(await hook.get_offsets(name)) == committed(source)
            assert await hook.get_connector_topics(name) == [topic]

            assert await hook.stop_connector(name) is None
            await await_state(hook, name, "STOPPED", task_count=0)
            rewound = [{"partition": {"filename": str(source)}, "offset": {"position": 0}}]
            assert "altered" in (await hook.alter_offsets(name, rewound)).message
            assert offsets_of(await hook.get_offsets(name)) == rewound
            assert "reset" in (await hook.reset_offsets(name)).message
            await hook.resume_connector(name)
            await await_state(hook, name, "RUNNING", "RUNNING", task_count=1)

            restarted = await hook.restart_connector(name, include_tasks=True)
            assert restarted is not None and restarted.name == name
            await await_state(hook, name, "RUNNING", "RUNNING", task_count=1)
            assert "worker" in await hook.set_logger_level("worker", "DEBUG")
            assert (await hook.get_logger("worker"))["level"] == "DEBUG"

            await hook.delete_connector(name)
            with pytest.raises(NotFoundError):
                await hook.get_connector_status(name)

    asyncio.run(scenario())


def test_test_connection_and_forbidden_topic_reset(
        standalone_worker: Callable[..., WorkerProcess],
        kafka_connect_conn: Callable[..., str], kafka_admin: Any, kafka_bootstrap: str) -> None:
    worker = standalone_worker({**WORKER_PROPS, "topic.tracking.allow.reset": "false"})
    status_topic = create_topic(kafka_admin, unique_name("connect-status"))

    kafka_connect_conn("kc_plain", host=worker.url)
    ok, message = KafkaConnectHook("kc_plain").test_connection()
    assert ok and message.startswith("Connected to Kafka Connect ") and worker.url in message

    kafka_connect_conn("kc_status", host=worker.url, extra={
        "bootstrap_servers": kafka_bootstrap, "status_topic": status_topic, "timeout": 15})
    ok, message = KafkaConnectHook("kc_status").test_connection()
    assert ok and f"status topic {status_topic!r} found" in message, message

    kafka_connect_conn("kc_missing", host=worker.url, extra={
        "bootstrap_servers": kafka_bootstrap, "status_topic": unique_name("absent"),
        "timeout": 15})
    ok, message = KafkaConnectHook("kc_missing").test_connection()
    assert not ok and "does not exist" in message

    # 403 from Connect (topic tracking reset disabled) is typed, never retried.
    with KafkaConnectHook("kc_plain", retry_delay=0.0) as hook, \
            pytest.raises(ForbiddenError) as caught:
        hook.reset_connector_topics("anything")
    assert caught.value.status_code == 403
    assert caught.value.message == "Topic tracking reset is disabled."

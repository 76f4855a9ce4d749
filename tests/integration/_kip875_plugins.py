"""Connectors for the KIP-875 integration tests, loaded by the worker subprocess by import
path (``connector.class=tests.integration._kip875_plugins.NoHookSourceConnector``)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from worker.api import ConnectException, SourceConnector, SourceRecord, SourceTask

PREFIX = "tests.integration._kip875_plugins"


class IdleSourceTask(SourceTask):
    """Polls nothing, stops promptly."""

    def start(self, props: Mapping[str, str]) -> None:
        self._stop = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        self._stop.wait(0.1)
        return None

    def stop(self) -> None:
        self._stop.set()


class NoHookSourceConnector(SourceConnector):
    """Does not implement ``alter_offsets``: Kafka's "framework-managed" message applies."""

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[SourceTask]:
        return IdleSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]

    def stop(self) -> None:
        pass


class VetoingSourceConnector(NoHookSourceConnector):
    """``alter_offsets`` refuses everything."""

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[str, Mapping[str, Any] | None]) -> bool:
        raise ConnectException("This connector refuses external offset changes")


class FailingStartConnector(NoHookSourceConnector):
    """``start()`` raises: the connector goes FAILED."""

    def start(self, props: Mapping[str, str]) -> None:
        raise ConnectException("injected start failure")

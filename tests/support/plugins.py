"""Test plugins loaded by worker subprocesses by import path
(``connector.class=tests.support.plugins.HangingStartConnector``): misbehaving ones for
fault tests, and KIP-875 hook variants for the offsets tests."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from worker.api import ConnectException, SourceConnector, SourceRecord, SourceTask

PREFIX = "tests.support.plugins"

_FOREVER = threading.Event()  # never set: waiting on it hangs like stuck I/O would


class IdleSourceTask(SourceTask):
    """Polls nothing, stops promptly."""

    def start(self, props: Mapping[str, str]) -> None:
        self._stop = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        self._stop.wait(0.1)
        return None

    def stop(self) -> None:
        self._stop.set()


class HangingStartConnector(SourceConnector):
    """``start()`` never returns."""

    def start(self, props: Mapping[str, str]) -> None:
        _FOREVER.wait()

    def task_class(self) -> type[SourceTask]:
        return IdleSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]

    def stop(self) -> None:
        pass


class HangingPollTask(SourceTask):
    """``poll()`` blocks forever and ``stop()`` does not interrupt it."""

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        _FOREVER.wait()
        return None

    def stop(self) -> None:
        pass


class HangingPollConnector(SourceConnector):
    def start(self, props: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[SourceTask]:
        return HangingPollTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]

    def stop(self) -> None:
        pass


class FailingPollTask(SourceTask):
    """Raises from ``poll()``: the task must go FAILED with this trace."""

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        raise RuntimeError("injected poll failure")

    def stop(self) -> None:
        pass


class FailingPollConnector(SourceConnector):
    def start(self, props: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[SourceTask]:
        return FailingPollTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{} for _ in range(max_tasks)]

    def stop(self) -> None:
        pass


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

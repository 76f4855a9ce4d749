"""Misbehaving plugins for fault tests, loaded by the worker subprocess by import path
(``connector.class=tests.support.plugins.HangingStartConnector``)."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from worker.api import SourceConnector, SourceRecord, SourceTask

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

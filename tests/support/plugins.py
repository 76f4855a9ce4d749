"""Test plugins loaded by worker subprocesses by import path
(``connector.class=tests.support.plugins.HangingStartConnector``): misbehaving ones for
fault tests, and KIP-875 hook variants for the offsets tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
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


class _TestSourceConnector(SourceConnector):
    """A connector whose behaviour lives in its task class (``TASK``): one task config per
    ``tasks.max`` slot, nothing to start or stop."""

    TASK: type[SourceTask]

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[SourceTask]:
        return self.TASK

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{} for _ in range(max_tasks)]

    def stop(self) -> None:
        pass


class HangingStartConnector(_TestSourceConnector):
    """``start()`` never returns."""

    TASK = IdleSourceTask

    def start(self, props: Mapping[str, str]) -> None:
        _FOREVER.wait()


class HangingPollTask(SourceTask):
    """``poll()`` blocks forever and ``stop()`` does not interrupt it."""

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        _FOREVER.wait()
        return None

    def stop(self) -> None:
        pass


class HangingPollConnector(_TestSourceConnector):
    TASK = HangingPollTask


class FailingPollTask(SourceTask):
    """Raises from ``poll()``: the task must go FAILED with this trace."""

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        raise RuntimeError("injected poll failure")

    def stop(self) -> None:
        pass


class FailingPollConnector(_TestSourceConnector):
    TASK = FailingPollTask


class NoHookSourceConnector(_TestSourceConnector):
    """Does not implement ``alter_offsets``: Kafka's "framework-managed" message applies."""

    TASK = IdleSourceTask


class VetoingSourceConnector(NoHookSourceConnector):
    """``alter_offsets`` refuses everything."""

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[str, Mapping[str, Any] | None]) -> bool:
        raise ConnectException("This connector refuses external offset changes")


class FailingStartConnector(NoHookSourceConnector):
    """``start()`` raises: the connector goes FAILED."""

    def start(self, props: Mapping[str, str]) -> None:
        raise ConnectException("injected start failure")


class GenerationConnector(_TestSourceConnector):
    """Numbers each ``task_configs`` call of this instance in the task configs, so a test
    can see when the runtime regenerated them."""

    TASK = IdleSourceTask

    def start(self, props: Mapping[str, str]) -> None:
        type(self).generations = getattr(type(self), "generations", 0)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        type(self).generations += 1
        return [{"generation": str(type(self).generations)} for _ in range(max_tasks)]


class TooManyTasksConnector(_TestSourceConnector):
    """Ignores ``max_tasks``: one task config more than asked (KIP-1004's
    ``tasks.max.enforce`` decides what happens)."""

    TASK = IdleSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{} for _ in range(max_tasks + 1)]


class SecondStartHangsTask(IdleSourceTask):
    """``start()`` hangs on its second call in the worker process and returns on the
    others: a task that cannot come back once (e.g. after a stop), then can."""

    starts = 0

    def start(self, props: Mapping[str, str]) -> None:
        type(self).starts += 1
        if type(self).starts == 2:
            _FOREVER.wait()
        super().start(props)


class SecondStartHangsConnector(_TestSourceConnector):
    TASK = SecondStartHangsTask


#: The longest a gated task waits for its gate (a test that forgets it must not hang).
GATE_TIMEOUT_S = 300.0


class GatedStartTask(IdleSourceTask):
    """``start()`` returns once the file named by ``gate.file`` exists (polled every
    50 ms, at most :data:`GATE_TIMEOUT_S`): a task the test lets start when it chooses."""

    def start(self, props: Mapping[str, str]) -> None:
        gate, deadline = Path(props["gate.file"]), time.monotonic() + GATE_TIMEOUT_S
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        super().start(props)


class GatedStartConnector(_TestSourceConnector):
    """Tasks of :class:`GatedStartTask`, given the connector's ``gate.file``."""

    TASK = GatedStartTask

    def start(self, props: Mapping[str, str]) -> None:
        self._gate = props["gate.file"]

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"gate.file": self._gate} for _ in range(max_tasks)]

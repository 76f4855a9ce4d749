"""Test plugins for the error-handling tests (``errors.retry.*``, dead letter queue, KIP-610's
errant record reporter), loaded by worker subprocesses by import path
(``transforms.flaky.type=tests.support.error_plugins.FlakyTransform``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from worker.api import (
    ConfigDef,
    ConnectException,
    Importance,
    RetriableException,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Transformation,
    Type,
)

PREFIX = "tests.support.error_plugins"


class FlakyTransform(Transformation):
    """Raises ``RetriableException`` on its first ``failures`` calls (counted per instance,
    i.e. per task), then passes records through unchanged: a transient outage."""

    def __init__(self) -> None:
        self._failures = 0
        self.calls = 0

    def config(self) -> ConfigDef:
        return ConfigDef().define("failures", Type.INT, 3, Importance.HIGH,
                                  "How many calls fail before the transformation recovers.")

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._failures = int(configs.get("failures", 3))

    def apply(self, record: Any) -> Any:
        self.calls += 1
        if self.calls <= self._failures:
            raise RetriableException(f"transient failure {self.calls} of {self._failures}")
        return record


class ErrantReportingSinkTask(SinkTask):
    """Writes each record's value to ``file``, one per line, except records whose value is
    a dict with ``"bad": true``: those it reports to the errant record reporter (KIP-610)."""

    def start(self, props: Mapping[str, str]) -> None:
        self._path = Path(props["file"])
        self._reporter = self.context.errant_record_reporter()
        if self._reporter is None:
            raise ConnectException("expected an errant record reporter")

    def put(self, records: list[SinkRecord]) -> None:
        reporter = self._reporter
        assert reporter is not None
        with self._path.open("a") as out:
            for record in records:
                if isinstance(record.value, dict) and record.value.get("bad"):
                    reporter.report(record, ValueError(f"cannot write {record.kafka_offset}"))
                else:
                    out.write(f"{record.value}\n")

    def stop(self) -> None:
        pass


class ErrantReportingSink(SinkConnector):
    """One task of :class:`ErrantReportingSinkTask` per ``tasks.max`` slot."""

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return ErrantReportingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

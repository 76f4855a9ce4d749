"""Test plugins for the typed-headers test, loaded by worker subprocesses by import path
(``connector.class=tests.support.header_plugins.TypedHeaderSource``).

``TypedHeaderSource`` writes ``count`` records to ``topic`` once: every even-numbered one
with the typed headers of :func:`typed_headers`, the others with none. ``HeaderRecordingSink``
appends one JSON line per record to ``file``: its value and its headers as
``[key, schema type, schema name, value]`` (values JSON-encoded, dates via ``str``).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from worker.api import (
    ConnectHeaders,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
)

PREFIX = "tests.support.header_plugins"
TIMESTAMP = dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)


def typed_headers(index: int) -> ConnectHeaders:
    """The headers of record ``index``: one of each kind, a legacy pair and a null."""
    return (ConnectHeaders([("legacy", f"pair-{index}")])
            .add_int("int", 42)
            .add_boolean("bool", True)
            .add("map", {"a": 1, "b": [True, False]})
            .add_string("text", "hello, world")
            .add_double("double", 3.5)
            .add_timestamp("ts", TIMESTAMP)
            .add("none", None)
            .add_string("drop-me", "x"))


class TypedHeaderSourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        self._topic = props["topic"]
        self._count = int(props.get("count", "4"))
        self._done = False
        self._stop = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if self._done:
            self._stop.wait(0.1)
            return None
        self._done = True
        return [SourceRecord({"source": "headers"}, {"index": i}, self._topic,
                             value=f"record-{i}",
                             headers=typed_headers(i) if i % 2 == 0 else None)
                for i in range(self._count)]

    def stop(self) -> None:
        self._stop.set()


class TypedHeaderSource(SourceConnector):
    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type[SourceTask]:
        return TypedHeaderSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        pass


class HeaderRecordingSinkTask(SinkTask):
    def start(self, props: Mapping[str, str]) -> None:
        self._path = Path(props["file"])

    def put(self, records: list[SinkRecord]) -> None:
        with self._path.open("a") as out:
            for record in records:
                headers = [[h.key, h.schema.type.value if h.schema else None,
                            h.schema.name if h.schema else None, h.value]
                           for h in record.headers]
                out.write(json.dumps({"value": record.value, "headers": headers},
                                     default=_plain) + "\n")

    def stop(self) -> None:
        pass


def _plain(value: Any) -> str:
    return str(value)


class HeaderRecordingSink(SinkConnector):
    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return HeaderRecordingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        pass

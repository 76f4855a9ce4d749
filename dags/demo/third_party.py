"""A third-party connector for the demo's plugin chapter: "Acme's ticket feed", a source
connector shipped the way many in-house connectors are — one plain Python module, no
distribution metadata, hence no manifest.

:func:`drop_plugin` writes it as a plugin location of its own under the worker's
``plugin.path`` (``<plugin.path>/acme-tickets/acme_tickets.py``). It is generated here,
outside every package of this repository, so only plugin discovery can find it: a worker
with ``plugin.discovery=service_load`` does not until ``connect-plugin-path
sync-manifests`` declares it in a manifest.
"""

from __future__ import annotations

from pathlib import Path

LOCATION = "acme-tickets"
MODULE = "acme_tickets"
#: Its canonical name: the Python path (no Java name to keep).
CONNECTOR_CLASS = f"{MODULE}.TicketSourceConnector"
VERSION = "1.4.2"
TOPIC = "tickets"
TICKETS = 25

SOURCE = f'''"""Acme's ticket feed: a Kafka Connect source connector that publishes support tickets.

A third-party plugin, written by the connect-plane demo into its plugin path: one plain
module, without distribution metadata or entry points.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    Importance,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Type,
)
from worker.api.data import STRING_SCHEMA

VERSION = "{VERSION}"
PARTITION = {{"feed": "acme"}}
SUBJECTS = ("login fails", "invoice missing", "slow dashboard", "export broken")
CONFIG = (ConfigDef()
          .define("topic", Type.STRING, NO_DEFAULT, Importance.HIGH, "Topic of the tickets")
          .define("tickets", Type.INT, {TICKETS}, Importance.MEDIUM, "How many to publish"))


class TicketSourceConnector(SourceConnector):
    """Publishes ``tickets`` tickets to ``topic``, one task."""

    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG.parse(props)
        self._props = dict(props)

    def task_class(self) -> type[SourceTask]:
        return TicketSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        pass


class TicketSourceTask(SourceTask):
    def version(self) -> str:
        return VERSION

    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(props)
        self._topic, self._count = parsed["topic"], parsed["tickets"]
        offset = self.context.offset_storage_reader.offset(PARTITION)
        self._next = 0 if offset is None else int(offset["ticket"]) + 1
        self._stopping = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if self._next >= self._count:
            self._stopping.wait(0.2)
            return None
        batch = range(self._next, min(self._count, self._next + 5))
        self._next = batch[-1] + 1
        return [SourceRecord(PARTITION, {{"ticket": n}}, self._topic, None, STRING_SCHEMA,
                             f"T-{{n:04d}}", STRING_SCHEMA,
                             json.dumps({{"ticket": f"T-{{n:04d}}",
                                         "subject": SUBJECTS[n % len(SUBJECTS)]}}))
                for n in batch]

    def stop(self) -> None:
        self._stopping.set()
'''


def drop_plugin(plugin_path: Path) -> Path:
    """Write the connector as the location ``<plugin_path>/acme-tickets``; returns the
    module's path."""
    location = plugin_path / LOCATION
    location.mkdir(parents=True, exist_ok=True)
    module = location / f"{MODULE}.py"
    module.write_text(SOURCE, encoding="utf-8")
    return module

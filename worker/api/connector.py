"""Connectors: the plugin's entry point, which configures tasks.

Lifecycle driven by the runtime (each connector in its own thread)::

    c = MyConnector(); c.initialize(context); c.start(props)
    c.task_configs(max_tasks)      # again whenever context.request_task_reconfiguration()
    c.stop()

KIP-875: ``alter_offsets`` is called before the worker alters or resets offsets of a
STOPPED connector. Return True if the connector handled/accepted it (the worker reports
that the offsets were altered "and the connector has accepted them"), False if it does not
implement the hook. Raise to veto the request (the REST call fails, nothing changes).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from worker.api.config_def import ConfigDef, ConfigValue

# Re-exported: connector authors import them from here too.
from worker.api.records import TopicPartition as TopicPartition
from worker.api.versioned import DEFAULT_VERSION as DEFAULT_VERSION

if TYPE_CHECKING:
    from worker.api.task import OffsetStorageReader, Task
class ConnectorContext(ABC):
    """Handed to a connector by the runtime."""

    @abstractmethod
    def request_task_reconfiguration(self) -> None:
        """Ask the runtime to call ``task_configs`` again and restart tasks if they changed."""

    @abstractmethod
    def raise_error(self, error: BaseException) -> None:
        """Fail the connector from a background thread of its own."""


class SourceConnectorContext(ConnectorContext):
    @property
    @abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader:
        """Committed source offsets of this connector."""


class Connector(ABC):
    """Base of source and sink connectors."""

    context: ConnectorContext

    def version(self) -> str:
        return DEFAULT_VERSION

    def config(self) -> ConfigDef:
        """Keys this connector accepts (used by validate and the REST plugin endpoints)."""
        return ConfigDef()

    def initialize(self, context: ConnectorContext) -> None:
        self.context = context

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        """Validate a config before it is stored; override for cross-key rules."""
        return self.config().validate(connector_configs)

    @abstractmethod
    def start(self, props: Mapping[str, str]) -> None:
        """Start with the connector's config (secrets already resolved)."""

    @abstractmethod
    def task_class(self) -> type[Task]:
        """The Task implementation."""

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """At most ``max_tasks`` task configs."""

    @abstractmethod
    def stop(self) -> None:
        """Release resources; called once, also after a failed start."""


class SourceConnector(Connector):
    context: SourceConnectorContext

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[str, Mapping[str, Any] | None]) -> bool:
        """KIP-875 hook. ``offsets`` maps each source partition, in its canonical string
        form (``worker.api.task.partition_key``), to its new offset; None = reset."""
        return False


class SinkConnector(Connector):
    TOPICS_CONFIG = "topics"
    TOPICS_REGEX_CONFIG = "topics.regex"

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[TopicPartition, int | None]) -> bool:
        """KIP-875 hook. ``offsets`` maps topic partitions to new offsets, None = reset."""
        return False

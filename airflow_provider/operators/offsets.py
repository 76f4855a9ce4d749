"""Offsets (KIP-875) and active-topic (KIP-558) operators, one REST call each.

Altering and resetting offsets need a STOPPED connector (Kafka Connect refuses otherwise);
:class:`~airflow_provider.operators.runbook.KafkaConnectOffsetsRunbookOperator` does the
whole stop → change → resume sequence with a snapshot to fall back on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context

from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.operators._base import KafkaConnectBaseOperator
from airflow_provider.utils.offsets import validate_offsets


def connector_type(hook: KafkaConnectHook, connector: str) -> str | None:
    """``"source"`` or ``"sink"`` from the connector's status (``None`` if not reported)."""
    return hook.get_connector_status(connector).type


class KafkaConnectGetOffsetsOperator(KafkaConnectBaseOperator):
    """Return the connector's committed offsets (``GET /connectors/{c}/offsets``) to XCom:
    ``[{"partition", "offset"}]``."""

    def execute(self, context: Context) -> list[dict[str, Any]]:
        offsets = self.hook.get_offsets(self.connector).to_list()
        self.log.info("Connector %s has offsets for %d partition(s)", self.connector,
                      len(offsets))
        return offsets


class KafkaConnectAlterOffsetsOperator(KafkaConnectBaseOperator):
    """``PATCH /connectors/{c}/offsets`` with ``offsets`` (templated), after checking their
    shape (sink partitions must be ``{"kafka_topic", "kafka_partition"}``)."""

    template_fields: Sequence[str] = ("connector", "offsets")
    template_fields_renderers = {"offsets": "json"}

    def __init__(self, *, offsets: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.offsets = offsets

    def execute(self, context: Context) -> dict[str, Any]:
        offsets = validate_offsets(self.offsets, connector_type(self.hook, self.connector))
        result = self.hook.alter_offsets(self.connector, offsets)
        self.log.info("Altered %d offset(s) of connector %s", len(offsets), self.connector)
        return result.to_dict()  # XCom: Connect's {"message"}


class KafkaConnectResetOffsetsOperator(KafkaConnectBaseOperator):
    """``DELETE /connectors/{c}/offsets``: forget every committed offset."""

    def execute(self, context: Context) -> dict[str, Any]:
        result = self.hook.reset_offsets(self.connector)
        self.log.info("Reset the offsets of connector %s", self.connector)
        return result.to_dict()  # XCom: Connect's {"message"}


class KafkaConnectResetTopicsOperator(KafkaConnectBaseOperator):
    """``PUT /connectors/{c}/topics/reset``: clear the connector's active-topic set."""

    def execute(self, context: Context) -> None:
        self.hook.reset_connector_topics(self.connector)
        self.log.info("Reset the active topics of connector %s", self.connector)

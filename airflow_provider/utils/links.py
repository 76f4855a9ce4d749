"""Operator extra link: the connector's status on the Kafka Connect REST API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:  # the task SDK's types, as BaseOperatorLink.get_link declares them
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey


class ConnectorStatusLink(BaseOperatorLink):
    """``GET /connectors/{c}/status`` of the operator's connector on its connection's URL."""

    name = "Kafka Connect status"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow_provider.hooks.kafka_connect import KafkaConnectHook

        connector = getattr(operator, "connector", None)
        conn_id = getattr(operator, "kafka_connect_conn_id", None)
        if not connector or not conn_id:
            return ""
        return KafkaConnectHook(kafka_connect_conn_id=conn_id).status_url(connector)

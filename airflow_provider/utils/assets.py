"""Airflow Assets for the Kafka topics a connector uses (KIP-558 active topics).

A topic's Asset URI is ``kafka://{first bootstrap server}/{topic}``; build the same Asset
in a downstream DAG with :func:`topic_asset` and schedule on it::

    schedule=[topic_asset("orders", bootstrap_servers="kafka:9092")]

Operators and sensors that learn a connector's topics at run time emit events through an
:class:`~airflow.sdk.AssetAlias` named by :func:`connector_topics_alias` (their topics are
not known when the DAG is parsed), so each run produces one Asset event per topic.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias

if TYPE_CHECKING:
    from airflow_provider.hooks.status_topic import KafkaConnectStatusTopicHook

log = logging.getLogger(__name__)

TOPIC_ASSET_SCHEME = "kafka"


def _first_server(bootstrap_servers: str) -> str:
    server = bootstrap_servers.split(",")[0].strip()
    if "://" in server:  # e.g. PLAINTEXT://host:9092
        server = server.split("://", 1)[1]
    if not server:
        raise ValueError(f"bootstrap_servers {bootstrap_servers!r} names no server")
    return server


def topic_asset_uri(topic: str, *, bootstrap_servers: str) -> str:
    if not topic:
        raise ValueError("topic must not be empty")
    return f"{TOPIC_ASSET_SCHEME}://{_first_server(bootstrap_servers)}/{topic}"


def topic_asset(topic: str, *, bootstrap_servers: str) -> Asset:
    """The Asset of one Kafka topic (the same URI the operators and sensors emit)."""
    uri = topic_asset_uri(topic, bootstrap_servers=bootstrap_servers)
    return Asset(uri=uri, name=uri, group="kafka-topic")


def connector_topics_alias(connector: str) -> AssetAlias:
    """The alias through which a connector's topic Asset events are emitted."""
    return AssetAlias(name=f"kafka-connect/{connector}/topics")


def emit_topic_assets(context: Mapping[str, Any], alias: AssetAlias, topics: Iterable[str], *,
                      bootstrap_servers: str | None, extra: Mapping[str, Any]) -> list[str]:
    """Add one Asset event per topic to ``alias`` (which must be among the task's outlets).

    Returns the URIs emitted; none when the connection names no bootstrap servers (logged).
    """
    topics = sorted(set(topics))
    if not topics:
        return []
    if not bootstrap_servers:
        log.warning("Not emitting Asset events for topics %s: the Kafka Connect connection "
                    "has no 'bootstrap_servers' extra to name the Kafka cluster", topics)
        return []
    events = context["outlet_events"][alias]
    uris = []
    for topic in topics:
        asset = topic_asset(topic, bootstrap_servers=bootstrap_servers)
        events.add(asset, extra=dict(extra))
        uris.append(asset.uri)
    log.info("Emitted Asset events for %s", ", ".join(uris))
    return uris


class TopicAssetsMixin:
    """For operators and sensors that learn a connector's topics at run time.

    Call :meth:`_add_topics_alias` on the constructor's kwargs before
    ``BaseOperator.__init__`` (the alias must be among the outlets when the DAG is
    parsed); call :meth:`emit_connector_topics` on success. The Kafka cluster that names
    the Assets comes from :attr:`kafka_hook`, the hook of the connection's Kafka side.
    """

    connector: str
    kafka_connect_conn_id: str
    emit_topic_assets: bool

    def _add_topics_alias(self, connector: str, emit: bool, kwargs: dict[str, Any]) -> None:
        self._topics_alias = connector_topics_alias(connector)
        if emit:
            kwargs["outlets"] = [*(kwargs.get("outlets") or []), self._topics_alias]

    @cached_property
    def kafka_hook(self) -> KafkaConnectStatusTopicHook:
        """The Kafka side of the ``kafka_connect`` connection (bootstrap servers, status
        topic)."""
        # Imported here: DAG files importing the operators need not load the Kafka client.
        from airflow_provider.hooks.status_topic import KafkaConnectStatusTopicHook

        return KafkaConnectStatusTopicHook(self.kafka_connect_conn_id)

    def emit_connector_topics(self, context: Mapping[str, Any], topics: Iterable[str]
                              ) -> list[str]:
        """Push the topics to XCom ``topics``; with ``emit_topic_assets`` emit one Asset
        event per topic; return the Asset URIs emitted."""
        topics = sorted(set(topics))
        context["ti"].xcom_push(key="topics", value=topics)
        if not self.emit_topic_assets:
            return []
        return emit_topic_assets(context, self._topics_alias, topics,
                                 bootstrap_servers=self.kafka_hook.settings.bootstrap_servers,
                                 extra={"connector": self.connector,
                                        "source": f"kafka_connect:{self.kafka_connect_conn_id}"})

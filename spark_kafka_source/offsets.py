"""Offset ranges: which topic-partitions to read, and from where to where.

Everything here runs on the Spark driver (or in any plain Python process, e.g. an Airflow
task that plans a run) and imports no pyspark. The Kafka and Kafka Connect look-ups go
through a :class:`KafkaLookups` object, so tests inject a fake one and production uses
:class:`ClusterLookups` (confluent-kafka ``AdminClient`` + httpx).

Record the exact ranges a job reads and re-read them later::

    ranges = resolve_offset_ranges({"kafka.bootstrap.servers": "kafka:9092",
                                    "subscribe": "orders"})
    starting, ending = ranges_to_json(ranges)   # Spark's JSON, every partition named
    # ... later, the same records again:
    read_kafka(spark, **{"kafka.bootstrap.servers": "kafka:9092", "subscribe": "orders",
                         "startingOffsets": starting, "endingOffsets": ending})

**Test broker caveat** (docs/architecture.md §6): ``latest`` comes from the partition's high
watermark. Tansu reports a watermark that counts produce *batches*, not records, so
``latest`` is a record offset there only when every produce request held one record.
Against Apache Kafka it is exact. Nothing here corrects for it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import quote

from spark_kafka_source.options import (
    EARLIEST,
    LATEST,
    KafkaSourceOptions,
    OffsetSpec,
    Subscription,
    parse_options,
    redact_url,
)

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]
Which = Literal["earliest", "latest"]

#: Kafka's internal topics, left out of ``subscribePattern`` as Kafka's listTopics() does.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
#: Consumer-only librdkafka settings kept away from the AdminClient (it would warn).
_CONSUMER_ONLY = frozenset({"group.id", "isolation.level"})


class KafkaSourceError(RuntimeError):
    """Kafka or Kafka Connect could not answer a look-up (metadata, offsets, topics)."""


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one topic-partition (``end`` exclusive, as in Spark)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def is_empty(self) -> bool:
        return self.end <= self.start


class KafkaLookups(Protocol):
    """What offset resolution needs to know about the cluster (injectable for tests)."""

    def topics(self) -> Mapping[str, int]:
        """Every topic of the cluster → its number of partitions."""

    def offsets(self, partitions: Sequence[TopicPartitionKey],
                which: Which) -> Mapping[TopicPartitionKey, int]:
        """The earliest or latest (high watermark) offset of each partition."""

    def connector_topics(self, connect_url: str, connector: str) -> Sequence[str]:
        """A connector's active topics (``GET /connectors/{c}/topics``, KIP-558)."""

    def close(self) -> None:
        """Release clients."""


class ClusterLookups:
    """:class:`KafkaLookups` against a real cluster: AdminClient for metadata and
    ``ListOffsets``, httpx for Kafka Connect. Clients are created on first use."""

    def __init__(self, options: KafkaSourceOptions, timeout_s: float = 30.0) -> None:
        self._options = options
        self._timeout_s = timeout_s
        self._admin: Any = None

    def _client(self) -> Any:
        if self._admin is None:
            from confluent_kafka import KafkaError, KafkaException
            from confluent_kafka.admin import AdminClient

            # Any: confluent-kafka's annotations leave out the ``logger`` object it takes.
            config: dict[str, Any] = {k: v for k, v in self._options.client_config.items()
                                      if k not in _CONSUMER_ONLY}
            config["logger"] = log
            try:
                self._admin = AdminClient(config)
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                if isinstance(error, KafkaError) and error.code() == KafkaError._INVALID_ARG:
                    raise ValueError(f"a kafka.* option was refused by librdkafka: "
                                     f"{error.str()}") from None
                raise KafkaSourceError(f"cannot create a Kafka client: {exc}") from exc
        return self._admin

    def topics(self) -> Mapping[str, int]:
        client = self._client()  # outside the try: a bad kafka.* option is a ValueError
        try:
            metadata = client.list_topics(timeout=self._timeout_s)
        except Exception as exc:  # KafkaException: broker unreachable, auth, timeout
            raise KafkaSourceError(f"no metadata from Kafka at "
                                   f"{self._options.bootstrap_servers}: {exc}") from exc
        return {name: len(topic.partitions) for name, topic in metadata.topics.items()
                if topic.error is None}

    def offsets(self, partitions: Sequence[TopicPartitionKey],
                which: Which) -> Mapping[TopicPartitionKey, int]:
        if not partitions:
            return {}
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec as KafkaOffsetSpec

        spec = KafkaOffsetSpec.earliest() if which == "earliest" else KafkaOffsetSpec.latest()
        isolation = (IsolationLevel.READ_COMMITTED
                     if self._options.client_config.get("isolation.level") == "read_committed"
                     else IsolationLevel.READ_UNCOMMITTED)
        request = {TopicPartition(t, p): spec for t, p in partitions}
        client = self._client()
        try:
            futures = client.list_offsets(request, isolation_level=isolation,
                                                  request_timeout=self._timeout_s)
            return {(tp.topic, tp.partition): future.result(timeout=self._timeout_s).offset
                    for tp, future in futures.items()}
        except Exception as exc:
            raise KafkaSourceError(f"cannot list the {which} offsets of {len(partitions)} "
                                   f"partitions: {exc}") from exc

    def connector_topics(self, connect_url: str, connector: str) -> Sequence[str]:
        import httpx

        # Basic auth may come as http://user:password@host: never put that in a message.
        path = f"/connectors/{quote(connector, safe='')}/topics"
        where = redact_url(connect_url)
        try:
            response = httpx.get(connect_url + path, timeout=self._timeout_s,
                                 auth=self._options.subscription.connect_auth)
        except httpx.HTTPError as exc:
            raise KafkaSourceError(f"cannot reach Kafka Connect at {where}: "
                                   f"{type(exc).__name__}: {exc}") from exc
        if response.status_code == 404:
            raise ValueError(f"option connector: Kafka Connect at {where} has no "
                             f"connector {connector!r}")
        if response.status_code != 200:
            raise KafkaSourceError(f"GET {where}{path} returned {response.status_code}: "
                                   f"{response.text[:500]}")
        topics = response.json().get(connector, {}).get("topics")
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise KafkaSourceError(f"GET {where}{path} did not return {{connector: "
                                   f"{{'topics': [...]}}}}: {response.text[:500]}")
        return topics

    def close(self) -> None:
        self._admin = None  # AdminClient has no close(); dropping it stops its threads

    def __getstate__(self) -> dict[str, Any]:
        # Readers holding this are pickled to Spark's Python workers: a live client is not
        # picklable, and each process makes its own on first use anyway.
        return {**self.__dict__, "_admin": None}


def select_topics(subscription: Subscription, lookups: KafkaLookups, *,
                  require_existing: bool = True) -> dict[str, int]:
    """The subscribed topics that exist → partition count, sorted by name.

    ``subscribe`` and ``connector`` name topics; one missing from the cluster is an error
    when ``require_existing`` (batch) and left out otherwise (a stream picks it up once it
    exists). ``subscribePattern`` matches whole names (Java's ``matches()``) and skips
    Kafka's internal topics.
    """
    existing = lookups.topics()
    if subscription.kind == "subscribePattern":
        pattern = re.compile(subscription.pattern)
        return {t: existing[t] for t in sorted(existing)
                if t not in INTERNAL_TOPICS and pattern.fullmatch(t)}
    if subscription.kind == "connector":
        names = list(dict.fromkeys(lookups.connector_topics(subscription.connect_url,
                                                            subscription.connector)))
        if not names:
            # Kafka Connect answers 200 with no topics for an unknown connector too.
            raise ValueError(f"option connector: connector {subscription.connector!r} has no "
                             "active topics (KIP-558): it does not exist, or has not "
                             "produced yet")
        option = "connector"
    else:
        names, option = list(subscription.topics), "subscribe"
    missing = [t for t in names if t not in existing]
    if missing and require_existing:
        raise ValueError(f"option {option}: topics not found in the cluster: "
                         f"{', '.join(missing)}")
    return {t: existing[t] for t in sorted(names) if t in existing}


def topic_partitions(topics: Mapping[str, int]) -> list[TopicPartitionKey]:
    return [(topic, p) for topic in sorted(topics) for p in range(topics[topic])]


def resolve_spec(name: str, spec: OffsetSpec, partitions: Sequence[TopicPartitionKey],
                 lookups: KafkaLookups) -> dict[TopicPartitionKey, int]:
    """Concrete offsets of ``partitions`` for one ``startingOffsets``/``endingOffsets``.

    As in Spark, JSON offsets must name exactly the subscribed partitions (use -2 / -1
    for earliest / latest); -2 and -1 are then looked up.
    """
    if spec.kind != "specific":
        return dict(lookups.offsets(partitions, spec.kind))
    given = {(t, p): off for t, per_topic in spec.offsets.items() for p, off in per_topic.items()}
    wanted = set(partitions)
    if set(given) != wanted:
        missing = sorted(wanted - set(given))
        unknown = sorted(set(given) - wanted)
        raise ValueError(
            f"option {name} must give an offset for every subscribed partition, and only "
            f"those (use -2 for earliest, -1 for latest); missing: {_names(missing)}; "
            f"not subscribed: {_names(unknown)}")
    resolved = dict(given)
    for which, marker in (("earliest", EARLIEST), ("latest", LATEST)):
        pending = [tp for tp in partitions if given[tp] == marker]
        resolved.update(lookups.offsets(pending, which))  # type: ignore[arg-type]
    return resolved


def _names(partitions: Iterable[TopicPartitionKey]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in partitions) or "none"


def resolve_offset_ranges(options: Mapping[str, Any] | KafkaSourceOptions, *,
                          lookups: KafkaLookups | None = None) -> list[OffsetRange]:
    """The concrete ``[start, end)`` of every subscribed partition for a batch read.

    ``options`` are the data source's (Spark's Kafka names; see
    :mod:`spark_kafka_source.options`). Every partition is returned, empty ranges
    included, sorted by topic and partition, so :func:`ranges_to_json` names them all —
    which Spark requires of offsets JSON. Raises ValueError for bad options, unknown
    topics, or a start past its end (with ``failOnDataLoss=false`` such a range is read
    as empty), and :class:`KafkaSourceError` when Kafka or Kafka Connect cannot answer.
    """
    parsed = (options if isinstance(options, KafkaSourceOptions)
              else parse_options(options, "batch"))
    own = lookups is None
    active: KafkaLookups = ClusterLookups(parsed) if lookups is None else lookups
    try:
        partitions = topic_partitions(select_topics(parsed.subscription, active))
        starts = resolve_spec("startingOffsets", parsed.starting, partitions, active)
        ends = resolve_spec("endingOffsets", parsed.ending, partitions, active)
    finally:
        if own:
            active.close()
    ranges = []
    for topic, partition in partitions:
        start, end = starts[(topic, partition)], ends[(topic, partition)]
        if start > end:
            if parsed.fail_on_data_loss:
                raise ValueError(f"startingOffsets {start} of {topic}-{partition} is past its "
                                 f"endingOffsets {end} (set failOnDataLoss=false to read "
                                 "such a partition as empty)")
            end = start
        ranges.append(OffsetRange(topic, partition, start, end))
    return ranges


def next_ranges(options: Mapping[str, Any], previous_ending: str | Mapping[str, Any] | None,
                *, lookups: KafkaLookups | None = None) -> list[OffsetRange]:
    """The ranges a scheduled run reads next: each partition from where the previous run
    stopped (its ``endingOffsets`` JSON, as :func:`ranges_to_json` gives it) up to
    ``endingOffsets`` (default ``latest``).

    Partitions the previous run did not know (new topics or partitions; every partition on
    the first run, ``previous_ending=None``) start at their earliest offset. A previous end
    that is no longer in the partition — records deleted by retention, or the topic
    re-created and shorter — is a ``ValueError`` unless ``failOnDataLoss=false``, which
    starts at the earliest offset instead (resp. reads nothing). ``startingOffsets`` in
    ``options`` is not allowed: the previous run decides it.
    """
    if any(str(key).lower() == "startingoffsets" for key in options):
        raise ValueError("next_ranges takes its start from previous_ending; do not set "
                         "startingOffsets")
    parsed = parse_options({**options, "startingOffsets": "earliest"}, "batch")
    if isinstance(previous_ending, str):
        previous_ending = json.loads(previous_ending) if previous_ending.strip() else None
    previous = offsets_from_json_dict(previous_ending or {})
    ranges = []
    for current in resolve_offset_ranges(parsed, lookups=lookups):
        stopped = previous.get((current.topic, current.partition))
        if stopped is None:
            start = current.start
        elif current.start <= stopped <= current.end:
            start = stopped
        elif parsed.fail_on_data_loss:  # the previous end is no longer in the partition
            raise ValueError(
                f"{current.topic}-{current.partition}: the previous run ended at offset "
                f"{stopped}, but the partition now holds offsets {current.start} to "
                f"{current.end} (records deleted, or the topic re-created); set "
                "failOnDataLoss=false to go on from what is there")
        else:
            start = current.start if stopped < current.start else current.end
        ranges.append(OffsetRange(current.topic, current.partition, start,
                                  max(start, current.end)))
    return ranges


def offsets_to_json_dict(offsets: Mapping[TopicPartitionKey, int]) -> dict[str, dict[str, int]]:
    """``{(t, p): o}`` → Spark's ``{"t": {"p": o}}``, topics and partitions in order.

    The order is fixed because Spark compares streaming offsets as JSON text.
    """
    result: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        result.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return result


def offsets_from_json_dict(offsets: Mapping[str, Mapping[str, int]]
                           ) -> dict[TopicPartitionKey, int]:
    """Spark's ``{"t": {"p": o}}`` → ``{(t, p): o}``."""
    return {(topic, int(p)): int(o) for topic, per in offsets.items() for p, o in per.items()}


def ranges_to_json(ranges: Iterable[OffsetRange]) -> tuple[str, str]:
    """``(startingOffsets, endingOffsets)`` JSON in Spark's format for these ranges.

    Passing both back as options reads exactly the same records again.
    """
    ranges = list(ranges)
    starting = offsets_to_json_dict({(r.topic, r.partition): r.start for r in ranges})
    ending = offsets_to_json_dict({(r.topic, r.partition): r.end for r in ranges})
    return (json.dumps(starting, separators=(",", ":")),
            json.dumps(ending, separators=(",", ":")))


def rate_limit(start: Mapping[TopicPartitionKey, int], latest: Mapping[TopicPartitionKey, int],
               limit: int) -> dict[TopicPartitionKey, int]:
    """Cap ``latest`` so that at most about ``limit`` offsets are read over all partitions.

    Spark's ``maxOffsetsPerTrigger`` rule: the limit is shared in proportion to what each
    partition has available, rounded down, but a partition with anything available gets
    at least one offset so small partitions are not starved.
    """
    sizes = {tp: max(0, end - start.get(tp, end)) for tp, end in latest.items()}
    total = sum(sizes.values())
    if total <= limit:
        return dict(latest)
    capped = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        share = limit * (sizes[tp] / total)
        step = int(share) if share >= 1 else (1 if sizes[tp] else 0)
        capped[tp] = min(end, begin + step)
    return capped

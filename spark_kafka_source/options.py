"""Options of the Kafka data source, parsed and checked before anything is read.

The names are those of Spark's own Kafka source (``format("kafka")``), so a job can switch
between the two by changing the format only:

===============================  ======================================================
``kafka.bootstrap.servers``      required
``subscribe``                    comma-separated topics          ┐
``subscribePattern``             regex over the cluster's topics ├ exactly one
``connector`` + ``connect.url``  a connector's active topics     ┘ (KIP-558, ours only)
``connect.username``/``.password`` HTTP basic auth for ``connect.url`` (ours only)
``startingOffsets``              ``earliest`` | ``latest`` | JSON ``{"t": {"0": 23}}``
``endingOffsets``                batch only: ``latest`` (default) | JSON (-1 = latest)
``maxOffsetsPerTrigger``         streaming: offsets per micro-batch, over all partitions
``failOnDataLoss``               ``true`` (default): fail when records are gone
``includeHeaders``               ``true`` (default here; Spark's default is ``false``)
``kafkaConsumer.pollTimeoutMs``  how long a read waits for a record before failing
``groupIdPrefix``                prefix of the generated ``group.id`` (no group is joined)
``kafka.*``                      passed to librdkafka without the prefix
===============================  ======================================================

Spark lower-cases option names (``CaseInsensitiveDict``), so every lookup here is
case-insensitive; error messages use the canonical spelling above. Options Spark's source
has but this one does not implement are refused rather than ignored, because ignoring e.g.
``startingOffsetsByTimestamp`` would silently read other records.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlparse

#: Offsets with a meaning in Spark's JSON: -2 = earliest, -1 = latest.
EARLIEST = -2
LATEST = -1

Mode = Literal["batch", "stream"]

# Canonical spellings, keyed by their lower-case form (how Spark hands options over).
_CANONICAL = {name.lower(): name for name in (
    "kafka.bootstrap.servers", "subscribe", "subscribePattern", "connector", "connect.url",
    "connect.username", "connect.password",
    "startingOffsets", "endingOffsets", "maxOffsetsPerTrigger", "failOnDataLoss",
    "includeHeaders", "kafkaConsumer.pollTimeoutMs", "groupIdPrefix",
    # Tuning knobs of Spark's offset fetching: harmless to accept, nothing to tune here.
    "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
)}

#: Options of Spark's Kafka source that this data source does not implement.
UNSUPPORTED = {name.lower(): name for name in (
    "assign", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp", "startingTimestamp",
    "endingTimestamp", "startingOffsetsByTimestampStrategy", "minOffsetsPerTrigger",
    "maxTriggerDelay", "minPartitions", "maxRecordsPerPartition", "topic",
)}

#: librdkafka settings the reader owns (Spark refuses the Java equivalents the same way).
RESERVED_KAFKA = {
    "auto.offset.reset": "set startingOffsets instead",
    "enable.auto.commit": "the source never commits offsets to Kafka",
    "enable.partition.eof": "the reader relies on partition EOF events",
    "key.deserializer": "keys are always read as bytes",
    "value.deserializer": "values are always read as bytes",
    "interceptor.classes": "not supported by the source",
}

#: Spark's default ``kafkaConsumer.pollTimeoutMs`` (``spark.network.timeout``).
DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_GROUP_ID_PREFIX = "spark-kafka-source"


@dataclass(frozen=True)
class OffsetSpec:
    """``startingOffsets`` / ``endingOffsets``: ``earliest``, ``latest`` or per partition.

    ``offsets`` (kind ``"specific"``) maps topic → partition → offset, where the offset may
    be :data:`EARLIEST` (-2) or :data:`LATEST` (-1).
    """

    kind: Literal["earliest", "latest", "specific"]
    offsets: Mapping[str, Mapping[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Subscription:
    """Which topics to read: exactly one of a list, a regex or a connector's topics."""

    kind: Literal["subscribe", "subscribePattern", "connector"]
    topics: tuple[str, ...] = ()
    pattern: str = ""
    connector: str = ""
    connect_url: str = ""
    #: ``(user, password)`` for Kafka Connect's REST API; kept out of ``repr``.
    connect_auth: tuple[str, str] | None = field(default=None, repr=False)

    def describe(self) -> str:
        if self.kind == "subscribe":
            return f"subscribe={','.join(self.topics)}"
        if self.kind == "subscribePattern":
            return f"subscribePattern={self.pattern}"
        return f"connector={self.connector} at {redact_url(self.connect_url)}"


@dataclass(frozen=True)
class KafkaSourceOptions:
    """The parsed options; ``client_config`` is the librdkafka configuration (the
    ``kafka.*`` options without their prefix, ``bootstrap.servers`` included)."""

    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    client_config: Mapping[str, str] = field(repr=False)  # may hold sasl.password etc.
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = True
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    group_id_prefix: str = DEFAULT_GROUP_ID_PREFIX

    @property
    def bootstrap_servers(self) -> str:
        return self.client_config["bootstrap.servers"]


def redact_url(url: str) -> str:
    """``url`` with the password of its user info (``http://user:pass@host``) masked."""
    parsed = urlparse(url)
    if not parsed.password:
        return url
    host = parsed.netloc.rpartition("@")[2]
    return parsed._replace(netloc=f"{parsed.username}:***@{host}").geturl()


def option_to_str(value: Any) -> str:
    """An option value as Spark passes it: booleans as ``true``/``false``, mappings as JSON
    (so ``startingOffsets`` may be given as a dict), everything else through ``str``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def normalize(options: Mapping[str, Any]) -> dict[str, str]:
    """Lower-case keys and string values; ``None`` values are dropped (unset)."""
    return {str(k).lower(): option_to_str(v) for k, v in options.items() if v is not None}


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise ValueError(f"option {name} must be true or false, got {raw!r}")
    return raw.strip().lower() == "true"


def _positive_int(opts: Mapping[str, str], name: str) -> int | None:
    raw = opts.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"option {name} must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"option {name} must be a positive integer, got {raw!r}")
    return value


def parse_offset_spec(name: str, raw: str) -> OffsetSpec:
    """Parse ``earliest``, ``latest`` or Spark's JSON ``{"topic": {"0": 23, "1": -2}}``.

    Raises ValueError naming ``name`` (the option) for anything else.
    """
    text = raw.strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower())  # type: ignore[arg-type]
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"option {name} must be 'earliest', 'latest' or JSON like "
                         f'{{"topic": {{"0": 23, "1": -2}}}}, got {raw!r}') from None
    if not isinstance(parsed, dict) or not parsed:
        raise ValueError(f"option {name} JSON must be a non-empty object of topics, got {raw!r}")
    offsets: dict[str, dict[int, int]] = {}
    for topic, partitions in parsed.items():
        if not topic or not isinstance(partitions, dict) or not partitions:
            raise ValueError(f"option {name}: topic {topic!r} must map to a non-empty object "
                             f"of partition → offset, got {partitions!r}")
        per_topic: dict[int, int] = {}
        for partition, offset in partitions.items():
            try:
                number = int(partition)
            except ValueError:
                number = -1
            if number < 0 or str(number) != str(partition).strip():
                raise ValueError(f"option {name}: {topic!r} has partition {partition!r}; "
                                 f"partitions are non-negative integers")
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < EARLIEST:
                raise ValueError(f"option {name}: offset of {topic}-{number} must be an integer "
                                 f">= 0, or -2 (earliest) / -1 (latest), got {offset!r}")
            per_topic[number] = offset
        offsets[topic] = per_topic
    return OffsetSpec("specific", offsets)


def _subscription(opts: Mapping[str, str]) -> Subscription:
    given = [n for n in ("subscribe", "subscribePattern", "connector") if n.lower() in opts]
    if len(given) != 1:
        raise ValueError("exactly one of the options subscribe, subscribePattern or connector "
                         f"(with connect.url) must be set, got {given or 'none'}")
    kind = given[0]
    value = opts[kind.lower()].strip()
    for name in ("connect.url", "connect.username", "connect.password"):
        if name in opts and kind != "connector":
            raise ValueError(f"option {name} is only used with the option connector")
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(f"option subscribe names no topic: {value!r}")
        return Subscription("subscribe", topics=tuple(dict.fromkeys(topics)))
    if kind == "subscribePattern":
        if not value:
            raise ValueError("option subscribePattern must not be empty")
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"option subscribePattern is not a valid regex: {exc}") from None
        return Subscription("subscribePattern", pattern=value)
    url = opts.get("connect.url", "").strip().rstrip("/")
    user, password = opts.get("connect.username"), opts.get("connect.password")
    if (user is None) != (password is None):
        raise ValueError("options connect.username and connect.password go together")
    if not value:
        raise ValueError("option connector must not be empty")
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError("option connector needs the option connect.url, the Kafka Connect "
                         f"REST URL (http[s]://host:port), got {redact_url(url)!r}")
    auth = (user, password) if user is not None and password is not None else None
    return Subscription("connector", connector=value, connect_url=url, connect_auth=auth)


def _client_config(opts: Mapping[str, str]) -> dict[str, str]:
    config = {key[len("kafka."):]: value for key, value in opts.items()
              if key.startswith("kafka.")}
    if not config.get("bootstrap.servers", "").strip():
        raise ValueError("option kafka.bootstrap.servers is required")
    for key, why in RESERVED_KAFKA.items():
        if key in config:
            raise ValueError(f"option kafka.{key} is not supported: {why}")
    return config


def _check_mode(name: str, spec: OffsetSpec, forbidden: int, word: str) -> None:
    if spec.kind == word:
        raise ValueError(f"option {name} can't be {word} for batch queries")
    for topic, partitions in spec.offsets.items():
        for partition, offset in partitions.items():
            if offset == forbidden:
                raise ValueError(f"option {name}: {topic}-{partition} can't be {forbidden} "
                                 f"({word}) for batch queries")


def parse_options(options: Mapping[str, Any], mode: Mode | None = None) -> KafkaSourceOptions:
    """Check and parse the options of a read; ``mode`` adds the batch or streaming rules.

    Defaults follow Spark: ``startingOffsets`` is ``earliest`` for batch and ``latest``
    for streaming; ``endingOffsets`` is ``latest`` (batch only). Without ``mode`` (the data
    source's ``schema()``, which does not know it yet) only the common rules apply.
    Raises ValueError naming the offending option.
    """
    opts = normalize(options)
    for key in opts:
        if key in UNSUPPORTED:
            raise ValueError(f"option {UNSUPPORTED[key]} of Spark's Kafka source is not "
                             "supported by the connect_kafka data source")
        if key not in _CANONICAL and not key.startswith("kafka."):
            raise ValueError(f"unknown option {key!r}; known options: "
                             f"{', '.join(sorted(_CANONICAL.values()))}, kafka.*")
    subscription = _subscription(opts)
    client_config = _client_config(opts)
    default_start = "latest" if mode == "stream" else "earliest"
    starting = parse_offset_spec("startingOffsets", opts.get("startingoffsets", default_start))
    ending = parse_offset_spec("endingOffsets", opts.get("endingoffsets", "latest"))
    if mode == "batch":
        _check_mode("startingOffsets", starting, LATEST, "latest")
        _check_mode("endingOffsets", ending, EARLIEST, "earliest")
    if mode == "stream" and "endingoffsets" in opts:
        raise ValueError("option endingOffsets is not allowed in streaming queries")
    poll_timeout = _positive_int(opts, "kafkaConsumer.pollTimeoutMs")
    prefix = opts.get("groupidprefix", DEFAULT_GROUP_ID_PREFIX).strip()
    if not prefix:
        raise ValueError("option groupIdPrefix must not be empty")
    return KafkaSourceOptions(
        subscription=subscription,
        starting=starting,
        ending=ending,
        client_config=client_config,
        max_offsets_per_trigger=_positive_int(opts, "maxOffsetsPerTrigger"),
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        include_headers=_bool(opts, "includeHeaders", True),
        poll_timeout_ms=poll_timeout or DEFAULT_POLL_TIMEOUT_MS,
        group_id_prefix=prefix,
    )

"""KIP-875 offsets: parse and validate request payloads, call the connector's hook, and
word the answers exactly as Apache Kafka Connect does.

A request is validated completely before anything is written (docs/architecture.md §8), so these
functions raise ``BadRequestError`` naming the offending entry and key, and never touch a
store. Messages follow Kafka's ``SinkUtils.parseSinkConnectorOffsets``,
``OffsetUtils.validateFormat`` and ``Worker.completeModifyOffsetsCallback``; where Kafka
accepts something it then fails on later (a negative offset, a null source partition) we
refuse it here with a message in the same style.

Two deliberate differences in *status* (the messages are Kafka's): Kafka answers 500 for
a nested value in a source offset (its ``DataException`` is not a client error to its
exception mapper) and for an ``alter_offsets`` hook that raises; both are errors in what
the client sent, so we answer 400.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from worker.api.connector import Connector, SinkConnector, SourceConnector, TopicPartition
from worker.api.task import partition_key
from worker.errors import BadRequestError, WorkerError
from worker.herder.models import ConnectorOffset, ConnectorOffsets, Message
from worker.util.threads import call_with_timeout

KAFKA_TOPIC_KEY = "kafka_topic"
KAFKA_PARTITION_KEY = "kafka_partition"
KAFKA_OFFSET_KEY = "kafka_offset"

#: ``ConnectorsResource.alterConnectorOffsets``: an absent or empty ``offsets`` list.
NO_OFFSETS_PROVIDED = "Partitions / offsets need to be provided for an alter offsets request"

#: ``Long.parseLong`` / ``Integer.parseInt`` syntax, for numbers sent as JSON strings.
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_MAX_PARTITION = 2**31 - 1
_MAX_OFFSET = 2**63 - 1

SourceOffsets = list[tuple[dict[str, Any], dict[str, Any] | None]]
SinkOffsets = dict[TopicPartition, int | None]


def not_stopped(name: str) -> BadRequestError:
    """Kafka's answer to an offsets write on a connector that is not (yet) STOPPED."""
    return BadRequestError(
        "Connectors must be in the STOPPED state before their offsets can be modified. This "
        "can be done for the specified connector by issuing a 'PUT' request to the "
        f"'/connectors/{name}/stop' endpoint")


def success_message(accepted: bool, reset: bool) -> Message:
    """``Worker.completeModifyOffsetsCallback``: whether the connector's hook took part."""
    done = "reset" if reset else "altered"
    if accepted:
        return Message(f"The offsets for this connector have been {done} successfully")
    return Message(f"The Connect framework-managed offsets for this connector have been {done} "
                   "successfully. However, if this connector manages offsets externally, they "
                   f"will need to be manually {done} in the system that the connector uses.")


# --- sinks -------------------------------------------------------------------------------


def parse_sink_offsets(offsets: list[ConnectorOffset]) -> SinkOffsets:
    """``{"kafka_topic", "kafka_partition"}`` → ``{"kafka_offset"}`` (or null = reset).

    As in Kafka, numbers may also be given as numeric strings (``"10"``); a later entry for
    the same topic partition wins. Raises BadRequestError.
    """
    if not offsets:
        raise BadRequestError(NO_OFFSETS_PROVIDED)
    parsed: SinkOffsets = {}
    for entry in offsets:
        partition = entry.partition
        if partition is None:
            raise BadRequestError("The partition for a sink connector offset cannot be null "
                                  "or missing")
        if KAFKA_TOPIC_KEY not in partition or KAFKA_PARTITION_KEY not in partition:
            raise BadRequestError("The partition for a sink connector offset must contain the "
                                  f"keys '{KAFKA_TOPIC_KEY}' and '{KAFKA_PARTITION_KEY}'")
        topic = partition[KAFKA_TOPIC_KEY]
        if not isinstance(topic, str) or not topic:
            raise BadRequestError(f"The value for the '{KAFKA_TOPIC_KEY}' key in the partition "
                                  "for a sink connector offset must be a non-empty string, not "
                                  f"{json.dumps(topic)}")
        number = _sink_integer(partition[KAFKA_PARTITION_KEY], "partition", "Partition",
                               _MAX_PARTITION)
        tp = TopicPartition(topic, number)
        if entry.offset is None:
            parsed[tp] = None
            continue
        if KAFKA_OFFSET_KEY not in entry.offset:
            raise BadRequestError("The offset for a sink connector should either be null or "
                                  f"contain the key '{KAFKA_OFFSET_KEY}'")
        parsed[tp] = _sink_integer(entry.offset[KAFKA_OFFSET_KEY], "offset", "Offset",
                                   _MAX_OFFSET)
    return parsed


def _sink_integer(value: Any, what: str, label: str, maximum: int) -> int:
    """Kafka's ``Long.parseLong(String.valueOf(value))``, plus a check that it is ≥ 0."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _JAVA_INTEGER.fullmatch(value):
        number = int(value)
    if number is None or number > maximum:
        raise BadRequestError(f"Failed to parse the following Kafka {what} value in the "
                              f"provided offsets: '{_java_text(value)}'. {label} values for "
                              "sink connectors need to be integers.")
    if number < 0:
        raise BadRequestError(f"Invalid Kafka {what} value in the provided offsets: "
                              f"'{number}'. {label} values for sink connectors cannot be "
                              "negative.")
    return number


def sink_offsets_entity(committed: Mapping[TopicPartition, int]) -> ConnectorOffsets:
    """A consumer group's committed offsets as KIP-875 entries, sorted by topic partition."""
    return ConnectorOffsets([
        ConnectorOffset({KAFKA_TOPIC_KEY: tp.topic, KAFKA_PARTITION_KEY: tp.partition},
                        {KAFKA_OFFSET_KEY: offset})
        for tp, offset in sorted(committed.items())])


# --- sources -----------------------------------------------------------------------------


def parse_source_offsets(offsets: list[ConnectorOffset]) -> SourceOffsets:
    """Source partitions and offsets: JSON objects of primitive values (offset null = reset).

    A later entry for the same partition wins, as in Kafka's ``ConnectorOffsets.toMap``.
    Raises BadRequestError.
    """
    if not offsets:
        raise BadRequestError(NO_OFFSETS_PROVIDED)
    parsed: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
    for entry in offsets:
        if entry.partition is None:
            raise BadRequestError("The partition for a source connector offset cannot be null "
                                  "or missing")
        _check_primitive_values(entry.partition, "partition")
        if entry.offset is not None:
            _check_primitive_values(entry.offset, "offset")
        offset = None if entry.offset is None else dict(entry.offset)
        parsed[partition_key(entry.partition)] = (dict(entry.partition), offset)
    return list(parsed.values())


def _check_primitive_values(data: Mapping[str, Any], where: str) -> None:
    """``OffsetUtils.validateFormat``: values must be null, booleans, numbers or strings."""
    for key, value in data.items():
        if isinstance(value, dict | list):
            kind = "MAP" if isinstance(value, dict) else "ARRAY"
            raise BadRequestError(f"Offsets may only contain primitive types as values, but "
                                  f"field {key} contains {kind} (in a source {where})")
        if value is not None and not isinstance(value, str | int | float | bool):
            raise BadRequestError(f"Offsets may only contain primitive types as values, but "
                                  f"field {key} contains {type(value).__name__} (in a source "
                                  f"{where})")
        if isinstance(value, float) and not math.isfinite(value):
            # Python's JSON parser accepts NaN/Infinity; the stores must write standard JSON.
            raise BadRequestError(f"The value of field {key} in a source {where} must be a "
                                  f"finite number, not {value}")


def source_offsets_entity(stored: Sequence[tuple[dict[str, Any], dict[str, Any] | None]]
                          ) -> ConnectorOffsets:
    """Stored source offsets as KIP-875 entries, in a stable order (by partition JSON)."""
    return ConnectorOffsets([ConnectorOffset(p, o) for p, o in
                             sorted(stored, key=lambda item: partition_key(item[0]))])


# --- the connector's hook ------------------------------------------------------------------


def call_alter_offsets_hook(new_connector: Callable[[], Connector], name: str,
                            config: Mapping[str, str],
                            offsets: SinkOffsets | SourceOffsets, timeout_s: float) -> bool:
    """Call the connector's ``alter_offsets`` on a separate thread (it is plugin code).

    ``offsets`` is what will be written: sinks ``{TopicPartition: offset | None}``, sources
    ``[(partition, offset | None)]`` (handed to the hook keyed by ``partition_key``).
    Returns whether the connector accepted the offsets (True) or does not implement the hook
    (False). Raises BadRequestError when the hook vetoes the request (raises), WorkerError
    when it does not answer within ``timeout_s``.
    """
    kind = "sink" if isinstance(offsets, dict) else "source"

    def hook() -> bool:
        connector = new_connector()
        if isinstance(offsets, dict) and isinstance(connector, SinkConnector):
            return bool(connector.alter_offsets(dict(config), dict(offsets)))
        if isinstance(offsets, list) and isinstance(connector, SourceConnector):
            keyed = {partition_key(partition): offset for partition, offset in offsets}
            return bool(connector.alter_offsets(dict(config), keyed))
        raise WorkerError(f"{type(connector).__name__} is not a {kind} connector")

    try:
        return call_with_timeout(hook, timeout_s, f"alter-offsets-{name}")
    except TimeoutError as exc:
        raise WorkerError(f"Timed out while calling the 'alterOffsets' method for {kind} "
                           f"connector {name}") from exc
    except WorkerError:
        raise
    except NotImplementedError as exc:  # Java's UnsupportedOperationException
        raise BadRequestError(f"Failed to modify offsets for connector {name} because it "
                              "doesn't support external modification of offsets") from exc
    except Exception as exc:  # the connector vetoed these offsets: its message explains why
        raise BadRequestError(str(exc) or f"Connector {name} rejected the offsets "
                              f"({type(exc).__name__})") from exc


def _java_text(value: Any) -> str:
    """How Java's ``String.valueOf`` prints a JSON value (Kafka quotes it in its message)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

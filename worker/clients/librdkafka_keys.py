"""Whether librdkafka has a configuration property of a given name.

Kafka's Java clients warn about a setting they do not know and go on; librdkafka refuses
to build a client with one. ``worker.clients.properties`` asks this module, so a Java
setting librdkafka has no counterpart for is dropped with a warning, as a Java client would
(instead of failing the worker or the task).
"""

from __future__ import annotations

import functools

from confluent_kafka import KafkaException, Producer

_UNKNOWN = "No such configuration property"


@functools.cache
def is_librdkafka_property(name: str) -> bool:
    """True if librdkafka knows ``name`` (for any client type). Asks librdkafka itself by
    building a producer with the setting and nothing else (no broker, well under a
    millisecond); the answer is cached per name. A value librdkafka refuses still means the
    name is known."""
    try:
        Producer({name: "0", "log_level": 0})
    except KafkaException as exc:
        return _UNKNOWN not in str(exc)
    except (TypeError, ValueError):
        return True  # a Python-level setting of confluent-kafka (e.g. a callback)
    return True

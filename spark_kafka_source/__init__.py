"""Reading Kafka topics from PySpark: the ``connect_kafka`` Python data source.

* :mod:`~spark_kafka_source.reader` — ``read_kafka`` / ``read_kafka_stream``: Spark's
  ``format("kafka")`` when its jar is loaded, else the Python data source;
* :mod:`~spark_kafka_source.kafka_source` — ``KafkaDataSource`` and its readers;
* :mod:`~spark_kafka_source.offsets` — ``resolve_offset_ranges`` / ``ranges_to_json``
  to plan and record exact ranges, ``next_ranges`` to continue where a previous run
  stopped (no pyspark needed, e.g. in an Airflow task);
* :mod:`~spark_kafka_source.options` — the options and their checks.

See ``docs/spark.md``. Names are loaded lazily, so importing this package needs neither
pyspark nor pyarrow.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "KafkaDataSource": "kafka_source",
    "OffsetRange": "offsets",
    "next_ranges": "offsets",
    "ranges_to_json": "offsets",
    "resolve_offset_ranges": "offsets",
    "read_kafka": "reader",
    "read_kafka_stream": "reader",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)

"""Tables of the SQL storage backend (SQLAlchemy Core, portable column types only).

JSON documents are stored as Text that the stores encode and decode themselves, so the
schema works unchanged on SQLite, PostgreSQL and MySQL. Names and topics are bounded
strings because several databases cannot index unbounded text; Kafka caps topic names at
249 characters and 255 leaves room for connector names. Source partitions can be
arbitrarily long, so their rows are keyed by a SHA-256 of the canonical partition JSON.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, MetaData, String, Table, Text

NAME_LENGTH = 255

metadata = MetaData()

connector_configs = Table(
    "connect_connector_configs",
    metadata,
    Column("connector", String(NAME_LENGTH), primary_key=True),
    Column("config", Text, nullable=False),
)

task_configs = Table(
    "connect_task_configs",
    metadata,
    Column("connector", String(NAME_LENGTH), primary_key=True),
    # The task index keeps the order the connector returned its task configs in.
    Column("task", Integer, primary_key=True, autoincrement=False),
    Column("config", Text, nullable=False),
)

target_states = Table(
    "connect_target_states",
    metadata,
    Column("connector", String(NAME_LENGTH), primary_key=True),
    Column("state", String(16), nullable=False),
)

offsets = Table(
    "connect_offsets",
    metadata,
    Column("connector", String(NAME_LENGTH), primary_key=True),
    Column("partition_hash", String(64), primary_key=True),
    Column("source_partition", Text, nullable=False),
    Column("source_offset", Text, nullable=False),
)

connector_status = Table(
    "connect_connector_status",
    metadata,
    Column("connector", String(NAME_LENGTH), primary_key=True),
    Column("state", String(16), nullable=False),
    Column("worker_id", String(NAME_LENGTH), nullable=False),
    Column("generation", BigInteger, nullable=False),
    Column("trace", Text, nullable=True),
)

task_status = Table(
    "connect_task_status",
    metadata,
    Column("connector", String(NAME_LENGTH), primary_key=True),
    Column("task", Integer, primary_key=True, autoincrement=False),
    Column("state", String(16), nullable=False),
    Column("worker_id", String(NAME_LENGTH), nullable=False),
    Column("generation", BigInteger, nullable=False),
    Column("trace", Text, nullable=True),
)

topic_status = Table(
    "connect_topic_status",
    metadata,
    Column("connector", String(NAME_LENGTH), primary_key=True),
    Column("topic", String(NAME_LENGTH), primary_key=True),
    Column("task", Integer, nullable=False),
    Column("discover_timestamp", BigInteger, nullable=False),
)

#: The dynamic worker configuration (``/admin/dynamic-worker-config``): one row, id
#: ``WORKER_CONFIG_ROW``, holding every override as one JSON object and a revision that
#: every write (a clear included) increments, so that the version workers report only grows.
WORKER_CONFIG_ROW = 1

worker_config = Table(
    "connect_worker_config",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("revision", BigInteger, nullable=False),
    Column("properties", Text, nullable=False),
)

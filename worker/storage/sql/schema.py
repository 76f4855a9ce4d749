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

#: Which worker holds the state (``worker/storage/sql/lock``), on server databases: one row
#: per lock (``name``). It is informational where PostgreSQL's advisory lock does the
#: locking, and the lock itself (a lease renewed by its holder) on other databases. Apart
#: from ``metadata``: only the lock creates it, and SQLite (which locks a file) never does.
lock_metadata = MetaData()

state_lock = Table(
    "connect_state_lock",
    lock_metadata,
    Column("name", String(64), primary_key=True),
    # The holder: its PostgreSQL backend PID (advisory lock) or a random token (lease).
    Column("holder", String(64), nullable=False),
    Column("pid", BigInteger, nullable=False),
    Column("host", String(NAME_LENGTH), nullable=False),
    Column("url", Text, nullable=False),
    Column("since_ms", BigInteger, nullable=False),
    # Lease only: the holder's clock when it last renewed, and how long that holds.
    Column("renewed_ms", BigInteger, nullable=False),
    Column("lease_ms", BigInteger, nullable=False),
)

"""The plugin SPI connector authors write against. Imports nothing from the runtime."""

from __future__ import annotations

from worker.api.config_def import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    ConfigValue,
    Importance,
    Password,
    Type,
    Width,
)
from worker.api.config_provider import ConfigData, ConfigProvider
from worker.api.connector import (
    Connector,
    ConnectorContext,
    SinkConnector,
    SourceConnector,
    SourceConnectorContext,
    TopicPartition,
)
from worker.api.converter import Converter
from worker.api.data import Schema, SchemaAndValue, SchemaType, Struct
from worker.api.exceptions import (
    ConfigException,
    ConnectException,
    DataException,
    RetriableException,
)
from worker.api.headers import ConnectHeaders, Header, HeaderConverter
from worker.api.records import ConnectRecord, SinkRecord, SourceRecord
from worker.api.rest_extension import (
    ConnectClusterState,
    Principal,
    RestExtension,
    RestExtensionContext,
)
from worker.api.task import (
    OffsetStorageReader,
    RecordMetadata,
    SinkTask,
    SinkTaskContext,
    SourceTask,
    SourceTaskContext,
    Task,
    partition_key,
)
from worker.api.transforms import Predicate, Transformation

__all__ = [
    "NO_DEFAULT", "ConfigDef", "ConfigKey", "ConfigValue", "Importance", "Password", "Type",
    "Width", "ConfigData", "ConfigProvider", "Connector", "ConnectorContext",
    "SinkConnector", "SourceConnector", "SourceConnectorContext", "TopicPartition",
    "Converter", "Schema", "SchemaAndValue", "SchemaType", "Struct", "ConfigException",
    "ConnectException", "DataException", "RetriableException", "ConnectHeaders", "Header",
    "HeaderConverter", "ConnectRecord", "SinkRecord",
    "SourceRecord", "OffsetStorageReader", "RecordMetadata", "SinkTask", "SinkTaskContext",
    "SourceTask", "SourceTaskContext", "Task", "partition_key", "Predicate", "Transformation",
    "ConnectClusterState", "Principal", "RestExtension", "RestExtensionContext",
]

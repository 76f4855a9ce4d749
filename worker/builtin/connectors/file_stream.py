"""FileStream source and sink connectors, as Apache Kafka 4.x ships them.

The source tails one file (or stdin) line by line; its source partition is
``{"filename": <file>}`` and its offset ``{"position": <byte position after the line>}``, so a
restarted task continues after the last committed line. The sink appends ``str(value)`` per
record to a file (or stdout).
"""

from __future__ import annotations

import json
import logging
import os
import select
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from itertools import accumulate, repeat
from typing import IO, Any

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfigException,
    ConnectException,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    TopicPartition,
    Type,
)
from worker.api.config_def import at_least, non_empty_string
from worker.api.data import STRING_SCHEMA

log = logging.getLogger(__name__)

FILE_CONFIG = "file"
TOPIC_CONFIG = "topic"
TASK_BATCH_SIZE_CONFIG = "batch.size"
DEFAULT_TASK_BATCH_SIZE = 2000
FILENAME_FIELD = "filename"
POSITION_FIELD = "position"

POLL_WAIT_S = 0.1
"""How long poll() waits when no complete line is available (stop() cuts it short)."""
MISSING_FILE_WAIT_S = 1.0
"""Back-off while the source file does not exist yet (Kafka waits one second, too)."""
_READ_CHUNK = 64 * 1024


def _single_topic(name: str, value: Any) -> None:
    non_empty_string()(name, value)
    # Kafka 2.x parsed "topic" as a list and refused more than one entry. A comma is not a
    # legal topic character anyway, so refusing it here gives the clearer message.
    if "," in str(value):
        raise ConfigException(name, value, "'topic' in FileStreamSourceConnector configuration "
                                           "requires definition of a single topic")


SOURCE_CONFIG_DEF = (
    ConfigDef()
    .define(FILE_CONFIG, Type.STRING, None, Importance.HIGH,
            "Source filename. If not specified, the standard input will be used")
    .define(TOPIC_CONFIG, Type.STRING, NO_DEFAULT, Importance.HIGH,
            "The topic to publish data to", validator=_single_topic)
    .define(TASK_BATCH_SIZE_CONFIG, Type.INT, DEFAULT_TASK_BATCH_SIZE, Importance.LOW,
            "The maximum number of records the source task can read from the file each time "
            "it is polled", validator=at_least(1))
)

SINK_CONFIG_DEF = ConfigDef().define(
    FILE_CONFIG, Type.STRING, None, Importance.HIGH,
    "Destination filename. If not specified, the standard output will be used")


class FileStreamSourceConnector(SourceConnector):
    """Reads lines from a file or stdin into one topic. Always exactly one task."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def config(self) -> ConfigDef:
        return SOURCE_CONFIG_DEF

    def start(self, props: Mapping[str, str]) -> None:
        parsed = SOURCE_CONFIG_DEF.parse(props)
        self._props = dict(props)
        log.info("Starting file source connector reading from %s",
                 parsed[FILE_CONFIG] or "standard input")

    def task_class(self) -> type[Task]:
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Only one input stream makes sense.
        return [dict(self._props)]

    def stop(self) -> None:
        """Nothing to release: the connector has no background work."""

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[str, Mapping[str, Any] | None]) -> bool:
        """KIP-875: accept well-formed offsets; the task checks the position on start."""
        filename = SOURCE_CONFIG_DEF.parse(connector_config)[FILE_CONFIG]
        if not filename:
            raise ConnectException(
                f"Offsets cannot be modified if the '{FILE_CONFIG}' configuration is "
                "unspecified. This is because stdin is used for input and offsets are not "
                "tracked.")
        for partition_text, offset in offsets.items():
            # Tombstones are always allowed so that garbage offsets can be cleaned up.
            if offset is None:
                continue
            if POSITION_FIELD not in offset:
                raise ConnectException("Offset objects should either be null or contain the "
                                       f"key '{POSITION_FIELD}'")
            position = offset[POSITION_FIELD]
            if not isinstance(position, int) or isinstance(position, bool):
                raise ConnectException(f"The value for the '{POSITION_FIELD}' key in the offset "
                                       "is expected to be a Long value")
            if position < 0:
                raise ConnectException(f"The value for the '{POSITION_FIELD}' key in the offset "
                                       "should be a non-negative value")
            partition = json.loads(partition_text)
            if not isinstance(partition, dict):
                raise ConnectException("Partition objects cannot be null")
            if FILENAME_FIELD not in partition:
                raise ConnectException(f"Partition objects should contain the key "
                                       f"'{FILENAME_FIELD}'")
        return True


class FileStreamSourceTask(SourceTask):
    """Tails a file (or stdin), emitting one STRING record per complete line.

    Bytes are read in binary so that the offset counts bytes; each line is decoded as UTF-8
    (malformed bytes become U+FFFD, as Java's reader does). A trailing line without its end
    of line is kept until it is completed.
    """

    def __init__(self) -> None:
        self._stopping = threading.Event()
        # Guards the stream against stop() closing it while poll() reads from it.
        self._lock = threading.Lock()
        self._filename: str | None = None
        self._topic = ""
        self._batch_size = DEFAULT_TASK_BATCH_SIZE
        self._stream: IO[bytes] | None = None
        self._stdin_fd: int | None = None
        self._stdin_eof = False
        self._buffer = bytearray()
        self._position: int | None = None  # file position of _buffer[0]; None for stdin
        self._partition: dict[str, Any] = {}
        self._warned_missing = False

    def start(self, props: Mapping[str, str]) -> None:
        parsed = SOURCE_CONFIG_DEF.parse(props)
        self._filename = parsed[FILE_CONFIG] or None
        self._topic = parsed[TOPIC_CONFIG]
        self._batch_size = parsed[TASK_BATCH_SIZE_CONFIG]
        self._partition = {FILENAME_FIELD: self._filename}
        if self._filename is None:
            # Tracking offsets for stdin makes no sense: it cannot be re-read.
            try:
                self._stdin_fd = sys.stdin.fileno()
            except (AttributeError, OSError, ValueError) as exc:
                raise ConnectException("FileStreamSourceTask cannot read standard input: "
                                       f"{exc}") from exc
        else:
            self._open_file()

    def _open_file(self) -> bool:
        """Open the file and seek to the committed position; False if it does not exist."""
        assert self._filename is not None
        try:
            stream = open(self._filename, "rb", buffering=0)
        except FileNotFoundError:
            if not self._warned_missing:
                log.warning("Couldn't find file %s for FileStreamSourceTask, sleeping to wait "
                            "for it to be created", self._filename)
                self._warned_missing = True
            return False
        except OSError as exc:
            raise ConnectException(f"Couldn't open file {self._filename}: {exc}") from exc
        try:
            position = self._committed_position()
            if position:
                log.debug("Found previous offset, skipping to file offset %d", position)
                stream.seek(position)
        except BaseException:
            stream.close()
            raise
        self._stream = stream
        self._position = position
        log.debug("Opened %s for reading", self._filename)
        return True

    def _committed_position(self) -> int:
        offset = self.context.offset_storage_reader.offset(self._partition)
        position = None if offset is None else offset.get(POSITION_FIELD)
        if position is None:
            return 0
        if not isinstance(position, int) or isinstance(position, bool):
            raise ConnectException("Offset position is the incorrect type")
        if position < 0:
            raise ConnectException(f"Offset position {position} is negative")
        return position

    def poll(self) -> list[SourceRecord] | None:
        if self._stopping.is_set():
            return None
        if self._filename is not None and self._stream is None:
            with self._lock:
                opened = not self._stopping.is_set() and self._open_file()
            if not opened:
                self._stopping.wait(MISSING_FILE_WAIT_S)
                return None
        records = self._read_records()
        if records:
            return records
        self._stopping.wait(POLL_WAIT_S)
        return None

    def _read_records(self) -> list[SourceRecord]:
        records: list[SourceRecord] = []
        with self._lock:
            if self._stopping.is_set():
                return records
            self._extract_lines(records)
            while len(records) < self._batch_size:
                chunk = self._read_chunk()
                if not chunk:
                    break
                self._buffer += chunk
                self._extract_lines(records)
        return records

    def _read_chunk(self) -> bytes:
        if self._stream is not None:
            # A regular file at EOF returns b"" now and the appended bytes on a later read.
            return self._stream.read(_READ_CHUNK) or b""
        if self._stdin_fd is None or self._stdin_eof:
            return b""
        # stdin may block: read only what is already there.
        ready, _, _ = select.select([self._stdin_fd], [], [], 0)
        if not ready:
            return b""
        chunk = os.read(self._stdin_fd, _READ_CHUNK)
        self._stdin_eof = not chunk
        return chunk

    def _extract_lines(self, records: list[SourceRecord]) -> None:
        room = self._batch_size - len(records)
        buffer = self._buffer
        if room <= 0 or not buffer:
            return
        # bytes.splitlines ends lines exactly where Kafka does ("\n", "\r\n", a lone "\r"),
        # in C; each piece keeps its end of line, so its length advances the position.
        pieces = buffer.splitlines(True)
        if len(pieces) > room:
            del pieces[room:]
        else:
            last = pieces[-1][-1]
            # No end of line yet, or a final "\r" that may be the first half of "\r\n".
            if last != 0x0A:
                pieces.pop()
        if not pieces:
            return
        position = self._position
        partition, topic = self._partition, self._topic
        timestamp = int(time.time() * 1000)
        # Each piece's position is the running sum of the lengths (its end of line included);
        # a piece's content never ends in "\r" or "\n" (that would have ended it earlier).
        ends = list(accumulate(map(len, pieces)))
        consumed = ends[-1]
        if position is None:  # stdin: no offsets
            positions: Iterable[int | None] = repeat(None, len(pieces))
        else:
            positions = [position + end for end in ends]
            self._position = position + consumed
        records.extend([SourceRecord(partition, {POSITION_FIELD: at}, topic, None, None, None,
                                     STRING_SCHEMA,
                                     piece.rstrip(b"\r\n").decode("utf-8", "replace"),
                                     timestamp)
                        for piece, at in zip(pieces, positions, strict=True)])
        del buffer[:consumed]

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            if self._stream is not None:
                self._stream.close()
                self._stream = None


class FileStreamSinkConnector(SinkConnector):
    """Writes record values to a file or stdout, one line per record."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def config(self) -> ConfigDef:
        return SINK_CONFIG_DEF

    def start(self, props: Mapping[str, str]) -> None:
        SINK_CONFIG_DEF.parse(props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # As in Kafka: every task appends to the same file.
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to release: the connector has no background work."""

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[TopicPartition, int | None]) -> bool:
        # Kafka's sink accepts any offsets: it keeps no state of its own.
        return True


class FileStreamSinkTask(SinkTask):
    """Appends ``str(value)`` plus a newline per record (Java's ``println``: None is "null")."""

    def __init__(self) -> None:
        self._filename: str | None = None
        self._out: IO[str] | None = None

    def start(self, props: Mapping[str, str]) -> None:
        self._filename = SINK_CONFIG_DEF.parse(props)[FILE_CONFIG] or None
        if self._filename is None:
            self._out = sys.stdout
            return
        try:
            self._out = open(self._filename, "a", encoding="utf-8")
        except OSError as exc:
            raise ConnectException(f"Couldn't find or create file '{self._filename}' for "
                                   "FileStreamSinkTask") from exc

    def put(self, records: list[SinkRecord]) -> None:
        if not records or self._out is None:
            return
        # One write per batch: per-record writes dominate the cost of this sink; a str
        # value (String and schemaless JSON converters) is written as it is.
        self._out.write("\n".join(
            [v if type(v := r.value) is str else "null" if v is None else str(v)
             for r in records]) + "\n")

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        if self._out is not None:
            self._out.flush()

    def stop(self) -> None:
        out, self._out = self._out, None
        if out is not None and out is not sys.stdout:
            out.close()

"""Topics chosen by connector name: a FileStreamSource on a real worker writes a topic, and
the data source finds it through ``GET /connectors/{c}/topics`` (KIP-558)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark_kafka_source.offsets import resolve_offset_ranges
from spark_kafka_source.reader import read_kafka, read_kafka_stream
from tests.integration._rest_helpers import STRING_CONVERTER, read_values
from tests.integration.spark._kafka import Record, produce
from tests.support import create_topic, wait_for_connector_state, wait_until

pytestmark = pytest.mark.integration

LINES = ["first line", "second line", "third line"]


def test_connector_name_selects_its_topics(
        spark: SparkSession, kafka_bootstrap: str, kafka_admin: Any, tmp_path: Path,
        standalone_worker: Callable[..., Any], unique_topic: Callable[..., str]) -> None:
    worker = standalone_worker({"key.converter": STRING_CONVERTER,
                                "value.converter": STRING_CONVERTER})
    topic = create_topic(kafka_admin, unique_topic("files"))
    unrelated = create_topic(kafka_admin, unique_topic("unrelated"))
    produce(kafka_bootstrap, [Record(unrelated, 0, None, b"not the connector's", 0)])
    source = tmp_path / "input.txt"
    source.write_text("", encoding="utf-8")
    name = unique_topic("file-source")
    response = worker.client.put(f"/connectors/{name}/config", json={
        "connector.class": "FileStreamSource", "file": str(source), "topic": topic})
    assert response.status_code in (200, 201), response.text
    wait_for_connector_state(worker.client, name, "RUNNING", "RUNNING")

    # One line at a time, each in Kafka before the next: one record per produce request,
    # so the Tansu test broker's watermark-based "latest" is a record offset
    # (docs/architecture.md §6).
    for count, line in enumerate(LINES, start=1):
        with source.open("a", encoding="utf-8") as out:
            out.write(line + "\n")
        assert read_values(kafka_bootstrap, topic, count, settle=0) == LINES[:count]

    def active_topics() -> list[str]:
        return worker.client.get(f"/connectors/{name}/topics").json()[name]["topics"]

    wait_until(active_topics, timeout=30, message=f"active topics of {name}")
    options = {"kafka.bootstrap.servers": kafka_bootstrap, "connector": name,
               "connect.url": worker.url}
    assert [(r.topic, r.start, r.end) for r in resolve_offset_ranges(options)] == [
        (topic, 0, len(LINES))]
    df = read_kafka(spark, **options)
    got = [(r.topic, r.offset, r.value.decode()) for r in df.orderBy("offset").collect()]
    assert got == [(topic, i, line) for i, line in enumerate(LINES)]  # nothing of unrelated

    with pytest.raises(ValueError, match="'no-such-connector' has no active topics"):
        resolve_offset_ranges({**options, "connector": "no-such-connector"})
    with pytest.raises(ValueError, match="needs the option connect.url"):
        read_kafka_stream(spark, **{"kafka.bootstrap.servers": kafka_bootstrap,
                                    "connector": name})

"""``topics.regex`` matches whole topic names, as in Kafka.

librdkafka matches a subscription pattern anywhere in a topic name; the worker anchors it
at both ends, so a sink subscribed with ``topics.regex=<name>`` never reads ``<name>_dlq``
or ``x<name>``, while an alternation still reads every topic it names. Checked end to end:
a real worker process, a FileStreamSink, the session's Kafka.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.integration._rest_helpers import STRING_CONVERTER
from tests.support import create_topic, wait_for_connector_state, wait_until

pytestmark = pytest.mark.integration

log = logging.getLogger(__name__)


def test_topics_regex_matches_whole_names_only(standalone_worker, kafka_admin: AdminClient,
                                               kafka_bootstrap: str, unique_topic,
                                               tmp_path: Path) -> None:
    base = unique_topic("orders").replace("-", "_")
    names = {"exact": base, "suffixed": f"{base}_dlq", "prefixed": f"x{base}",
             "other": f"{base}_eu"}
    for name in names.values():
        create_topic(kafka_admin, name)
    # The near misses first: had the sink matched them, their records would come first.
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "logger": log})
    for kind in ("suffixed", "prefixed", "exact", "other"):
        for i in range(5):
            producer.produce(names[kind], value=f"{kind}-{i}".encode())
    assert producer.flush(30) == 0

    worker = standalone_worker({"key.converter": STRING_CONVERTER,
                                "value.converter": STRING_CONVERTER})
    sink_file = tmp_path / "sink.txt"
    # Kafka's whole-name semantics also for an alternation and a user's own anchors.
    config = {"connector.class": "FileStreamSink", "file": str(sink_file),
              "topics.regex": f"^{base}$|{base}_eu"}
    assert worker.client.put("/connectors/regex-sink/config", json=config).status_code == 201
    wait_for_connector_state(worker.client, "regex-sink", "RUNNING", tasks_state="RUNNING")

    def lines() -> list[str]:
        return sink_file.read_text().splitlines() if sink_file.exists() else []

    wait_until(lambda: len(lines()) >= 10, timeout=60,
               message=lambda: f"the matching topics' 10 records; have {lines()}")
    assert sorted(lines()) == sorted([f"exact-{i}" for i in range(5)]
                                     + [f"other-{i}" for i in range(5)])
    topics = worker.client.get("/connectors/regex-sink/topics").json()["regex-sink"]["topics"]
    assert sorted(topics) == sorted([names["exact"], names["other"]])

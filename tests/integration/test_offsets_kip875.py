"""KIP-875 offsets API against a real worker subprocess and the session's Kafka.

Follows KIP-875's test plan for the standalone worker: ``GET/PATCH/DELETE
/connectors/{c}/offsets`` for source connectors (FileStreamSource, SequenceGenerator, a
connector without the hook, one whose hook vetoes) and sink connectors (FileStreamSink, also
with ``consumer.override.group.id``): reads in every state, writes refused unless STOPPED
with nothing changed, malformed payloads, altered and reset offsets taking effect after
resume, per-partition resets, idempotent reset, and a reset refused while the sink's group
has an active member.

One worker serves the module (tests use their own connector and topic names); its
converters are ``StringConverter`` so lines and values travel unchanged. Records are counted
by reading the topic from offset 0 (``read_values``), never from the high watermark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer

from tests.integration._rest_helpers import (
    SESSION_TIMEOUT_MS,
    STRING_CONVERTER,
    error_body,
    path,
    read_values,
)
from tests.support import (
    create_topic,
    unique_name,
    wait_for_connector_state,
    wait_until,
)
from tests.support.plugins import PREFIX

pytestmark = pytest.mark.integration

ALTERED = "The offsets for this connector have been altered successfully"
RESET = "The offsets for this connector have been reset successfully"
FRAMEWORK_ALTERED = ("The Connect framework-managed offsets for this connector have been "
                     "altered successfully. However, if this connector manages offsets "
                     "externally, they will need to be manually altered in the system that "
                     "the connector uses.")
NO_OFFSETS = "Partitions / offsets need to be provided for an alter offsets request"


def not_stopped(name: str) -> str:
    return ("Connectors must be in the STOPPED state before their offsets can be modified. "
            "This can be done for the specified connector by issuing a 'PUT' request to the "
            f"'/connectors/{name}/stop' endpoint")


WORKER_OVERRIDES = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


# --- helpers -------------------------------------------------------------------------------


def get_offsets(client: httpx.Client, name: str) -> list[dict[str, Any]]:
    response = client.get(f"{path(name)}/offsets")
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"offsets"}
    offsets: list[dict[str, Any]] = body["offsets"]
    return offsets


def wait_for_offsets(client: httpx.Client, name: str, expected: list[dict[str, Any]]
                     ) -> None:
    def key(entry: dict[str, Any]) -> str:
        return repr(sorted(entry["partition"].items()))

    want = sorted(expected, key=key)
    last: list[Any] = []

    def check() -> bool:
        nonlocal last
        last = sorted(get_offsets(client, name), key=key)
        return last == want
    wait_until(check, timeout=60, message=lambda: f"offsets of {name} == {want}; got {last}")


def create(client: httpx.Client, name: str, config: dict[str, str], tasks: int = 1) -> None:
    response = client.put(f"{path(name)}/config", json=config)
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=tasks)


def stop(client: httpx.Client, name: str) -> None:
    assert client.put(f"{path(name)}/stop").status_code == 204
    wait_for_connector_state(client, name, "STOPPED", task_count=0)


def resume(client: httpx.Client, name: str, tasks: int = 1) -> None:
    assert client.put(f"{path(name)}/resume").status_code == 202
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=tasks)


def patch(client: httpx.Client, name: str, offsets: Any) -> httpx.Response:
    return client.patch(f"{path(name)}/offsets", json={"offsets": offsets})


def assert_writes_refused(client: httpx.Client, name: str, offsets: list[Any]) -> None:
    """PATCH and DELETE answer 400 (not STOPPED) and the offsets stay as they were."""
    before = get_offsets(client, name)
    assert error_body(patch(client, name, offsets), 400) == not_stopped(name)
    assert error_body(client.delete(f"{path(name)}/offsets"), 400) == not_stopped(name)
    assert get_offsets(client, name) == before


def produce(bootstrap: str, topic: str, values: list[str], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value.encode(), partition=partition)
        producer.flush(30)  # one record per batch: offsets then match positions exactly
    assert producer.flush(30) == 0


def lines(file: Path) -> list[str]:
    return file.read_text(encoding="utf-8").splitlines() if file.exists() else []


def wait_for_lines(file: Path, count: int, client: httpx.Client, name: str,
                   committed: list[dict[str, Any]]) -> list[str]:
    """The file once it has ``count`` lines AND the sink committed ``committed`` (the end
    of the topic): every record was put and flushed by then, so duplicates would show."""
    wait_until(lambda: len(lines(file)) >= count, timeout=60,
               message=lambda: f"{count} lines in {file}; got {lines(file)}")
    wait_for_offsets(client, name, committed)
    return lines(file)


def sink_entry(topic: str, partition: int, offset: int | None) -> dict[str, Any]:
    return {"partition": {"kafka_topic": topic, "kafka_partition": partition},
            "offset": None if offset is None else {"kafka_offset": offset}}


# --- sources -------------------------------------------------------------------------------


def test_file_source_alter_then_reset(client: httpx.Client, kafka_admin: Any,
                                      kafka_bootstrap: str, tmp_path: Path) -> None:
    name, topic = unique_name("off-file"), create_topic(kafka_admin, unique_name("off-file"))
    source = tmp_path / "in.txt"
    text = [f"line-{n}" for n in range(5)]
    source.write_text("".join(f"{t}\n" for t in text), encoding="utf-8")
    size = source.stat().st_size
    create(client, name, {"connector.class": "FileStreamSource", "file": str(source),
                          "topic": topic})
    assert read_values(kafka_bootstrap, topic, 5) == text
    committed = [{"partition": {"filename": str(source)}, "offset": {"position": size}}]
    wait_for_offsets(client, name, committed)  # GET while RUNNING

    rewind = [{"partition": {"filename": str(source)},
               "offset": {"position": len("line-0\nline-1\n")}}]
    assert_writes_refused(client, name, rewind)  # RUNNING
    assert client.put(f"{path(name)}/pause").status_code == 202
    wait_for_connector_state(client, name, "PAUSED", tasks_state="PAUSED", task_count=1)
    assert_writes_refused(client, name, rewind)  # PAUSED
    assert get_offsets(client, name) == committed  # GET while PAUSED

    stop(client, name)
    assert get_offsets(client, name) == committed  # GET while STOPPED
    response = patch(client, name, rewind)
    assert response.status_code == 200, response.text
    assert response.json() == {"message": ALTERED}  # FileStreamSource implements the hook
    assert get_offsets(client, name) == rewind

    resume(client, name)  # continues from the altered position: lines 2..4 again
    assert read_values(kafka_bootstrap, topic, 8) == text + text[2:]
    wait_for_offsets(client, name, committed)

    stop(client, name)
    for _ in range(2):  # DELETE is idempotent
        response = client.delete(f"{path(name)}/offsets")
        assert response.status_code == 200, response.text
        assert response.json() == {"message": RESET}
        assert get_offsets(client, name) == []
    resume(client, name)  # starts from scratch
    assert read_values(kafka_bootstrap, topic, 13) == text + text[2:] + text


def test_malformed_source_payloads_change_nothing(client: httpx.Client, kafka_admin: Any,
                                                  kafka_bootstrap: str, tmp_path: Path
                                                  ) -> None:
    name, topic = unique_name("off-bad"), create_topic(kafka_admin, unique_name("off-bad"))
    source = tmp_path / "in.txt"
    source.write_text("a\nb\n", encoding="utf-8")
    create(client, name, {"connector.class": "FileStreamSource", "file": str(source),
                          "topic": topic})
    committed = [{"partition": {"filename": str(source)}, "offset": {"position": 4}}]
    wait_for_offsets(client, name, committed)
    stop(client, name)
    url = f"{path(name)}/offsets"
    file_partition = {"filename": str(source)}

    # Well-formed bodies with bad offsets: 400 naming the problem (the hook's own message
    # for what only the connector knows).
    for offsets, message in [
        ([], NO_OFFSETS),
        ([{"partition": None, "offset": {"position": 1}}],
         "The partition for a source connector offset cannot be null or missing"),
        ([{"partition": file_partition, "offset": {"position": {"bytes": 1}}}],
         "Offsets may only contain primitive types as values, but field position contains "
         "MAP"),
        ([{"partition": file_partition, "offset": {"position": -1}}],
         "The value for the 'position' key in the offset should be a non-negative value"),
        ([{"partition": file_partition, "offset": {"line": 1}}],
         "Offset objects should either be null or contain the key 'position'"),
    ]:
        assert message in error_body(patch(client, name, offsets), 400)
    assert error_body(client.patch(url, json={}), 400) == NO_OFFSETS
    # Bodies of the wrong shape: 400 (Kafka's Jackson errors are 500s, docs/limitations.md).
    for body in ([], {"offsets": {}}, {"offsets": [123]}, {"offsets": [{"key": "val"}]},
                 {"offsets": [{"partition": []}]}):
        assert "Cannot deserialize request body" in error_body(client.patch(url, json=body),
                                                               400)
    assert get_offsets(client, name) == committed


def test_generator_patch_only_augments_and_null_resets_one_partition(
        client: httpx.Client, kafka_admin: Any, kafka_bootstrap: str) -> None:
    name, topic = unique_name("off-gen"), create_topic(kafka_admin, unique_name("off-gen"))
    create(client, name, {"connector.class": "SequenceGenerator", "topic": topic,
                          "tasks.max": "2", "count": "5", "message.size": "16"}, tasks=2)
    done = [{"partition": {"task": t}, "offset": {"seq": 4}} for t in (0, 1)]
    wait_for_offsets(client, name, done)
    assert len(read_values(kafka_bootstrap, topic, 10)) == 10
    stop(client, name)

    response = patch(client, name, [{"partition": {"task": 0}, "offset": {"seq": 1}}])
    assert response.json() == {"message": ALTERED}
    assert get_offsets(client, name) == [{"partition": {"task": 0}, "offset": {"seq": 1}},
                                         {"partition": {"task": 1}, "offset": {"seq": 4}}]
    resume(client, name, tasks=2)  # task 0 continues after seq 1; task 1 has nothing left
    values = read_values(kafka_bootstrap, topic, 13)
    assert sorted(v[:15] for v in values[10:]) == [f"0-{s:012d}-" for s in (2, 3, 4)]
    wait_for_offsets(client, name, done)

    stop(client, name)
    response = patch(client, name, [{"partition": {"task": 1}, "offset": None}])
    assert response.status_code == 200, response.text
    assert get_offsets(client, name) == [{"partition": {"task": 0}, "offset": {"seq": 4}}]
    resume(client, name, tasks=2)  # only task 1 starts over
    values = read_values(kafka_bootstrap, topic, 18)
    assert sorted(v[:15] for v in values[13:]) == [f"1-{s:012d}-" for s in range(5)]


def test_hookless_and_vetoing_connectors(client: httpx.Client) -> None:
    quiet, veto = unique_name("off-nohook"), unique_name("off-veto")
    create(client, quiet, {"connector.class": f"{PREFIX}.NoHookSourceConnector"})
    create(client, veto, {"connector.class": f"{PREFIX}.VetoingSourceConnector"})
    stop(client, quiet)
    stop(client, veto)
    offsets = [{"partition": {"shard": "a"}, "offset": {"pos": 9}}]

    assert patch(client, quiet, offsets).json() == {"message": FRAMEWORK_ALTERED}
    assert get_offsets(client, quiet) == offsets
    assert client.delete(f"{path(quiet)}/offsets").json()["message"].startswith(
        "The Connect framework-managed offsets for this connector have been reset "
        "successfully.")
    assert error_body(patch(client, veto, offsets), 400) == (
        "This connector refuses external offset changes")
    assert get_offsets(client, veto) == []


def test_unknown_connector_is_404(client: httpx.Client) -> None:
    url = "/connectors/no-such-connector/offsets"
    assert error_body(client.get(url), 404) == "Connector no-such-connector not found"
    body = {"offsets": [{"partition": {"a": 1}, "offset": None}]}
    assert error_body(client.patch(url, json=body), 404) == \
        "Connector no-such-connector not found"
    assert error_body(client.delete(url), 404) == "Connector no-such-connector not found"


# --- sinks ---------------------------------------------------------------------------------


def test_file_sink_alter_then_reset(client: httpx.Client, kafka_admin: Any,
                                    kafka_bootstrap: str, tmp_path: Path) -> None:
    name = unique_name("off-sink")
    topic = create_topic(kafka_admin, unique_name("off-sink"), partitions=2)
    p0, p1 = [f"p0-{n}" for n in range(5)], [f"p1-{n}" for n in range(5)]
    produce(kafka_bootstrap, topic, p0, partition=0)
    produce(kafka_bootstrap, topic, p1, partition=1)
    out = tmp_path / "out.txt"
    create(client, name, {"connector.class": "FileStreamSink", "topics": topic,
                          "file": str(out)})
    committed = [sink_entry(topic, 0, 5), sink_entry(topic, 1, 5)]
    # (also GET while RUNNING)
    assert sorted(wait_for_lines(out, 10, client, name, committed)) == sorted(p0 + p1)

    assert_writes_refused(client, name, [sink_entry(topic, 0, 2)])
    stop(client, name)
    wait_for_offsets(client, name, committed)  # GET while STOPPED

    # Malformed: 400 naming the problem, nothing changed.
    for offsets, message in [
        ([{"partition": {"kafka_topic": topic}, "offset": None}],
         "The partition for a sink connector offset must contain the keys 'kafka_topic' and "
         "'kafka_partition'"),
        ([{"partition": {"kafka_topic": topic, "kafka_partition": "x"}, "offset": None}],
         "Partition values for sink connectors need to be integers"),
        ([{"partition": {"kafka_topic": topic, "kafka_partition": -1}, "offset": None}],
         "Partition values for sink connectors cannot be negative"),
        ([{"partition": {"kafka_topic": 7, "kafka_partition": 0}, "offset": None}],
         "'kafka_topic' key in the partition for a sink connector offset must be a "
         "non-empty string"),
        ([{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {}}],
         "The offset for a sink connector should either be null or contain the key "
         "'kafka_offset'"),
        ([{"partition": {"kafka_topic": topic, "kafka_partition": 0},
           "offset": {"kafka_offset": -3}}],
         "Offset values for sink connectors cannot be negative"),
        ([sink_entry(topic, 0, 1), {"partition": None, "offset": None}],
         "The partition for a sink connector offset cannot be null or missing"),
    ]:
        assert message in error_body(patch(client, name, offsets), 400)
    assert get_offsets(client, name) == committed

    # Partition 0 back to offset 2, partition 1 reset: only those two change.
    response = patch(client, name, [sink_entry(topic, 0, 2), sink_entry(topic, 1, None)])
    assert response.status_code == 200, response.text
    assert response.json() == {"message": ALTERED}
    assert get_offsets(client, name) == [sink_entry(topic, 0, 2)]
    resume(client, name)  # p0 from offset 2; p1 from the beginning (auto.offset.reset)
    assert sorted(wait_for_lines(out, 18, client, name, committed)[10:]) == \
        sorted(p0[2:] + p1)

    stop(client, name)
    for _ in range(2):  # DELETE is idempotent: the second finds no group
        response = client.delete(f"{path(name)}/offsets")
        assert response.status_code == 200, response.text
        assert response.json() == {"message": RESET}
        assert get_offsets(client, name) == []
    resume(client, name)  # the group is gone: everything again from the beginning
    assert sorted(wait_for_lines(out, 28, client, name, committed)[18:]) == sorted(p0 + p1)


def test_sink_with_overridden_group_and_an_active_member(
        client: httpx.Client, kafka_admin: Any, kafka_bootstrap: str, tmp_path: Path) -> None:
    name, group = unique_name("off-group"), unique_name("off-custom-group")
    topic = create_topic(kafka_admin, unique_name("off-group"))
    produce(kafka_bootstrap, topic, [f"v{n}" for n in range(3)])
    out = tmp_path / "out.txt"
    create(client, name, {"connector.class": "FileStreamSink", "topics": topic,
                          "file": str(out), "consumer.override.group.id": group})
    committed = [sink_entry(topic, 0, 3)]
    wait_for_offsets(client, name, committed)
    assert committed_offsets(kafka_admin, group) == {(topic, 0): 3}
    assert committed_offsets(kafka_admin, f"connect-{name}") == {}
    stop(client, name)

    # An outside consumer joins the connector's group: writes must be refused, as Apache
    # Kafka refuses to delete a group with members (the test broker might not).
    intruder = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group,
                         "session.timeout.ms": SESSION_TIMEOUT_MS,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        intruder.subscribe([topic])
        wait_until(lambda: intruder.poll(0.2) is not None or bool(intruder.assignment()),
                   timeout=30, message="the outside consumer joining the group")
        for response, verb in ((client.delete(f"{path(name)}/offsets"), "reset"),
                               (patch(client, name, [sink_entry(topic, 0, 0)]), "alter")):
            message = error_body(response, 500)
            assert message.startswith(f"Failed to {verb} consumer group offsets for connector "
                                      f"{name} either because its tasks haven't stopped "
                                      "completely yet"), message
            assert "zombie sink tasks" in message
        assert get_offsets(client, name) == committed
    finally:
        intruder.close()

    response = wait_until(lambda: (r := client.delete(f"{path(name)}/offsets")).status_code
                          == 200 and r, timeout=30, message="reset once the group is empty")
    assert response.json() == {"message": RESET}
    assert get_offsets(client, name) == []
    assert committed_offsets(kafka_admin, group) == {}


def committed_offsets(admin: Any, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets, read directly from Kafka."""
    result = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=10)[group].result(15)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions or []
            if tp.offset >= 0}

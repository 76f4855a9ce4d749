from __future__ import annotations

import pytest

from airflow_provider.exceptions import OffsetsShapeError
from airflow_provider.utils.offsets import validate_offsets

SINK = {"partition": {"kafka_topic": "orders", "kafka_partition": 0},
        "offset": {"kafka_offset": 42}}
SOURCE = {"partition": {"filename": "/data/in.txt"}, "offset": {"position": 1024}}


def test_valid_offsets_pass_through() -> None:
    assert validate_offsets([SINK], "sink") == [SINK]
    assert validate_offsets({"offsets": [SOURCE]}, "source") == [SOURCE]
    reset_one = {"partition": SINK["partition"], "offset": None}
    assert validate_offsets([reset_one], "sink") == [reset_one]


@pytest.mark.parametrize(("offsets", "kind", "message"), [
    ("nope", None, "must be a list"),
    ([], None, "must not be empty"),
    ([{"partition": {"a": 1}}], None, r"offsets\[0\] must be an object with exactly"),
    ([{"partition": {}, "offset": None}], None, r"offsets\[0\].partition must be a non-empty"),
    ([{"partition": {"a": 1}, "offset": 5}], None, r"offsets\[0\].offset must be an object"),
    ([SOURCE, SOURCE], None, r"offsets\[1\].partition .* appears more than once"),
    ([{"partition": {"a": object()}, "offset": None}], None, "is not JSON"),
    ([SOURCE], "sink", "exactly the keys kafka_topic and kafka_partition"),
    ([{"partition": {"kafka_topic": "", "kafka_partition": 0}, "offset": None}], "sink",
     "kafka_topic must be a non-empty string"),
    ([{"partition": {"kafka_topic": "t", "kafka_partition": -1}, "offset": None}], "sink",
     "kafka_partition must be a non-negative integer"),
    ([{"partition": {"kafka_topic": "t", "kafka_partition": True}, "offset": None}], "sink",
     "kafka_partition must be a non-negative integer"),
    ([{"partition": SINK["partition"], "offset": {"kafka_offset": "3"}}], "sink",
     "kafka_offset must be a non-negative integer"),
    ([{"partition": SINK["partition"], "offset": {"position": 3}}], "sink",
     "exactly the key kafka_offset"),
])
def test_bad_shapes_are_refused_with_the_offending_entry(offsets, kind, message) -> None:
    with pytest.raises(OffsetsShapeError, match=message):
        validate_offsets(offsets, kind)


def test_source_offsets_are_the_connectors_own_objects() -> None:
    # A sink-shaped entry is a valid source entry too: only sinks have a fixed schema.
    assert validate_offsets([SINK], "source") == [SINK]

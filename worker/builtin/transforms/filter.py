"""Kafka's ``org.apache.kafka.connect.transforms.Filter``: drops every record; gate it with a
predicate (``transforms.<t>.predicate``).
"""

from __future__ import annotations

from worker.api import Transformation
from worker.api.transforms import R


class Filter(Transformation):
    """Drops every record; gate it with a predicate (``transforms.<t>.predicate``)."""

    def apply(self, record: R) -> R | None:
        return None

"""Body of ``GET /connectors/{c}/topics`` (KIP-558).

Kafka keeps the connector name out of ``ActiveTopicsInfo``'s JSON and uses it as the key of
the enclosing map: the answer is ``{"<connector>": {"topics": [...]}}``.
"""

from __future__ import annotations

from worker.rest.datamodels.base import ResponseModel


class ActiveTopicsResponse(ResponseModel):
    """The value under the connector's name: the topics its tasks used, sorted."""

    topics: list[str]

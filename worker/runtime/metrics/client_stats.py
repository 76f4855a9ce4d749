"""What one librdkafka statistics document says about a client, per client kind: the
values ``worker.runtime.metrics.clients`` reads from the documents and the task metrics
keep (``TaskMetrics.client_stats``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: A sink task's consumer lag: (topic, partition, records behind the end), per assigned
#: partition whose lag is known (``worker.runtime.metrics.consumer_lag``).
Lags = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True, slots=True)
class ConsumerStats:
    """What one statistics document of a consumer says (None: not in the document)."""

    client_id: str
    records_consumed: int | None  # top-level rxmsgs; a sink task's: what the task read
    bytes_consumed: int | None  # top-level rxmsg_bytes
    # (topic, partition, lag), assigned and known: a sink task's, read by its thread
    # (worker.runtime.metrics.consumer_lag); none from statistics
    lags: Lags = ()

    @property
    def lag_max(self) -> int | None:
        return max((lag for _, _, lag in self.lags), default=None)


@dataclass(frozen=True, slots=True)
class ProducerStats:
    """What one statistics document of a producer says (None: not in the document)."""

    client_id: str
    records_sent: int | None  # top-level txmsgs
    bytes_sent: int | None  # top-level tx_bytes
    request_latency_avg_ms: float  # brokers' rtt over the last interval; NaN: no request


@dataclass(frozen=True, slots=True)
class AdminStats:
    """What one statistics document of an admin client says (None: not in the document).
    librdkafka calls an admin client a producer in it: only the listener knows."""

    client_id: str
    requests: int | None  # top-level tx: requests sent to the brokers
    responses: int | None  # top-level rx: responses received
    bytes_sent: int | None  # top-level tx_bytes
    bytes_received: int | None  # top-level rx_bytes
    connections: int  # brokers (not librdkafka's bootstrap or internal ones) in state UP


ClientStats = ConsumerStats | ProducerStats | AdminStats

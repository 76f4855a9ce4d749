"""librdkafka consumer settings that every reader in the worker starts from (a ``consumer.``
key, a connector override or the caller's own config still wins).

``fetch.queue.backoff.ms``: once a partition's local queue holds ``queued.min.messages``
(100,000) records, librdkafka stops fetching for it and looks again only after this long,
1 s by default since librdkafka 2.4. A reader that drains a full queue in less than that
idles until the second is up: a FileStreamSink task read 150k records/s with the default
and 560k with 100 ms (docs/benchmarks.md). Kafka's Java consumer fetches again as soon as
its buffer is consumed. 100 ms is about how long the worker's fastest sink takes to drain a
full queue (at 1 M records/s), and wakes a backlogged consumer a tenth as often as 10 ms,
which read no faster.
"""

from __future__ import annotations

FETCH_QUEUE_BACKOFF_MS = 100

#: The defaults, as confluent-kafka takes them.
CONSUMER_DEFAULTS: dict[str, str] = {"fetch.queue.backoff.ms": str(FETCH_QUEUE_BACKOFF_MS)}

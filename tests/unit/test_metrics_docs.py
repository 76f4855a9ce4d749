"""docs/metrics.md lists every per-task metric the collector serves, under its Prometheus
name. Here rather than in tests/unit/worker: the lower-bound run (tests/lower_bound) tests
the installed wheel from a copy of tests/ without the repository's docs."""

from __future__ import annotations

import re
from pathlib import Path

from worker.runtime.metrics.clients import (
    ADMIN_METRICS,
    ADMIN_PREFIX,
    CONSUMER_METRICS,
    CONSUMER_PREFIX,
    PRODUCER_METRICS,
    PRODUCER_PREFIX,
)
from worker.runtime.metrics.collector import (
    ERROR_METRICS,
    SINK_METRICS,
    SOURCE_METRICS,
    TASK_METRICS,
    prometheus_name,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def test_every_metric_is_listed_in_the_docs() -> None:
    text = DOCS.read_text(encoding="utf-8")
    specs = [*TASK_METRICS, *SOURCE_METRICS, *SINK_METRICS, *ERROR_METRICS]
    missing = [s.name for s in specs
               if not re.search(rf"`{re.escape(prometheus_name(s.group, s.name))}`", text)]
    assert missing == []


def test_every_client_metric_is_listed_in_the_docs() -> None:
    text = DOCS.read_text(encoding="utf-8")
    names = [f"{CONSUMER_PREFIX}_records_lag",
             *(f"{CONSUMER_PREFIX}_{name}" for name, _, _ in CONSUMER_METRICS),
             *(f"{PRODUCER_PREFIX}_{name}" for name, _, _ in PRODUCER_METRICS),
             *(f"{ADMIN_PREFIX}_{name}" for name, _, _ in ADMIN_METRICS)]
    missing = [n.replace("-", "_") for n in names if f"`{n.replace('-', '_')}`" not in text]
    assert missing == []

"""What Apache Kafka Connect 4.x exposes over REST, for tests that check we expose it too.

``KAFKA_ENDPOINTS`` lists every public endpoint of Kafka Connect 4.x's OpenAPI document as
``(method, path)`` with path parameters written ``{}`` (names differ between Jersey and
FastAPI and do not matter to clients). The internal ``PUT /connectors/{c}/tasks`` and
``PUT /connectors/{c}/fence`` are hidden in Kafka's document too; ``GET
/connectors/{c}/tasks-config`` was removed in 4.0 (KIP-970).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

KAFKA_ENDPOINTS: frozenset[tuple[str, str]] = frozenset({
    ("get", "/"), ("get", "/health"),
    ("get", "/connectors"), ("post", "/connectors"),
    ("get", "/connectors/{}"), ("delete", "/connectors/{}"),
    ("get", "/connectors/{}/config"), ("put", "/connectors/{}/config"),
    ("patch", "/connectors/{}/config"),
    ("get", "/connectors/{}/status"), ("post", "/connectors/{}/restart"),
    ("put", "/connectors/{}/pause"), ("put", "/connectors/{}/resume"),
    ("put", "/connectors/{}/stop"),
    ("get", "/connectors/{}/tasks"), ("get", "/connectors/{}/tasks/{}/status"),
    ("post", "/connectors/{}/tasks/{}/restart"),
    ("get", "/connectors/{}/topics"), ("put", "/connectors/{}/topics/reset"),
    ("get", "/connectors/{}/offsets"), ("patch", "/connectors/{}/offsets"),
    ("delete", "/connectors/{}/offsets"),
    ("get", "/connector-plugins"), ("get", "/connector-plugins/{}/config"),
    ("put", "/connector-plugins/{}/config/validate"),
    ("get", "/admin/loggers"), ("get", "/admin/loggers/{}"), ("put", "/admin/loggers/{}"),
})

HTTP_METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options",
                          "trace"})


def served_endpoints(spec: Mapping[str, Any]) -> set[tuple[str, str]]:
    """``(method, path)`` of every operation in an OpenAPI document, parameters as ``{}``."""
    return {(method, re.sub(r"\{[^}]+\}", "{}", path))
            for path, item in spec["paths"].items() for method in item
            if method in HTTP_METHODS}

"""connect-plane's Kafka Connect–compatible worker runtime (see docs/architecture.md)."""

#: The worker's version, reported by ``GET /`` (Kafka Connect's ``version``).
__version__ = "0.1.0"

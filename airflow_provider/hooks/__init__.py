"""Hooks: Kafka Connect's REST API (sync and async) and the status topic."""

"""Hooks: every external system the provider talks to — Kafka Connect's REST API (sync and
async), the status topic, TLS handshakes (tls) and the connect-plugin-path tool (plugin_path)."""

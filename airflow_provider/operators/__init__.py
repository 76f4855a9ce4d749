"""Operators: connector lifecycle, offsets (KIP-875), topics (KIP-558), the offsets runbook,
certificate rotation, plugin manifest sync (KIP-898)."""

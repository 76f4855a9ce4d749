"""Operators: connector lifecycle, offsets (KIP-875), topics (KIP-558), the offsets runbook."""

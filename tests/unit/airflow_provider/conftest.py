"""Fixtures the provider's unit tests share."""

from __future__ import annotations

import socket

import pytest


@pytest.fixture
def refused_port() -> int:
    """A loopback port where nothing listens (connections are refused at once)."""
    with socket.socket() as sock:  # bind then close: the port is free and closed
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

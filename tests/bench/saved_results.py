"""How the Kafka benchmarks save their figures: one JSON file each, with the machine and
which broker the figures came from (``KAFKA_BOOTSTRAP_SERVERS`` or the embedded Tansu)."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any


def save(path: Path, summary: dict[str, Any]) -> None:
    """Write ``summary`` plus ``machine`` and ``broker`` to ``path`` (directories made)."""
    summary = {**summary,
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                          f"Python {platform.python_version()}",
               "broker": "KAFKA_BOOTSTRAP_SERVERS" if os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
                         else "embedded Tansu"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2) + "\n")

"""Stand-ins the operator and sensor unit tests share."""

from __future__ import annotations

from typing import Any


class FakeTI:
    """The task instance of a test context: records ``xcom_push`` calls in ``pushed``."""

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value

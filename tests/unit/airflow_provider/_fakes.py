"""Stand-ins the operator and sensor unit tests share."""

from __future__ import annotations

from typing import Any


class FakeTI:
    """The task instance of a test context: records ``xcom_push`` calls in ``pushed``;
    ``xcom_pull(key=...)`` reads this task's pushed values back."""

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value

    def xcom_pull(self, task_ids: str | None = None, key: str = "return_value") -> Any:
        assert task_ids is None, "only this task's XComs are stand-ins"
        return self.pushed.get(key)

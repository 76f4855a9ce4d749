"""The file-descriptor budget: the soft limit raised at start, task starts refused (naming
the limit, one warning per shortage) while too few descriptors are free, and the shortage
reported until it is over."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from worker.api.exceptions import ConnectException
from worker.runtime.fd_budget import (
    FDS_PER_TASK,
    MEASURE_AFTER_TASKS,
    RESERVE_FDS,
    FdBudget,
    describe,
    open_fds,
)

LIMIT = 300


class OpenCount:
    def __init__(self, value: int) -> None:
        self.value = value

    def __call__(self) -> int:
        return self.value


def test_starts_are_refused_within_the_reserve_and_the_shortage_is_reported(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="worker.runtime.fd_budget")
    open_now = OpenCount(LIMIT - RESERVE_FDS - FDS_PER_TASK)  # exactly one more task fits
    budget = FdBudget(LIMIT, count_open=open_now)
    budget.check_task_start()
    assert budget.shortage() is None
    open_now.value += 1
    for _ in range(3):
        with pytest.raises(ConnectException) as refused:
            budget.check_task_start()
    message = str(refused.value)
    assert "limit of 300 (RLIMIT_NOFILE)" in message and "ulimit -n" in message
    assert budget.shortage() == message
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "Not enough file descriptors" in warnings[0].getMessage()
    open_now.value -= 20  # descriptors freed (tasks stopped)
    assert budget.shortage() is None
    assert "available again" in caplog.records[-1].getMessage()
    budget.check_task_start()


def test_tasks_whose_clients_are_not_open_yet_count_too() -> None:
    tasks = [0]
    budget = FdBudget(LIMIT, tasks=lambda: tasks[0], count_open=OpenCount(30))
    fit = (LIMIT - 30 - RESERVE_FDS) // FDS_PER_TASK
    for _ in range(fit):  # each admitted task counts before it opens anything
        budget.check_task_start()
        tasks[0] += 1
    with pytest.raises(ConnectException, match="RLIMIT_NOFILE"):
        budget.check_task_start()


def test_a_task_costs_what_the_running_tasks_cost_on_average_if_more() -> None:
    # A bigger cluster: each client keeps more sockets, 20 descriptors a task here.
    tasks, open_now = [0], OpenCount(30)
    budget = FdBudget(LIMIT, tasks=lambda: tasks[0], count_open=open_now)
    assert budget.per_task() == FDS_PER_TASK
    tasks[0], open_now.value = MEASURE_AFTER_TASKS, 30 + 20 * MEASURE_AFTER_TASKS
    assert budget.per_task() == 20
    open_now.value = 30 + 3 * MEASURE_AFTER_TASKS  # clients not open yet: the floor counts
    assert budget.per_task() == FDS_PER_TASK
    # 10 tasks at 20 each: 230 in use, 70 free, which is less than the reserve and a task.
    tasks[0], open_now.value = 10, 30 + 20 * 10
    with pytest.raises(ConnectException, match="a task needs about 20"):
        budget.check_task_start()
    tasks[0], open_now.value = 9, 30 + 20 * 9  # 90 free: 64 kept and one task of 20 fit
    assert budget.shortage() is None
    budget.check_task_start()


def test_describe_says_how_many_tasks_fit() -> None:
    line = describe(1024, 4096, 4096)
    assert line.startswith("File descriptor limit (RLIMIT_NOFILE): 4096 (raised from 1024")
    assert f"room for about {(4096 - RESERVE_FDS) // FDS_PER_TASK} tasks" in line


def test_the_soft_limit_is_raised_to_the_hard_limit() -> None:
    script = ("import json, resource\n"
              "from worker.runtime.fd_budget import raise_nofile_limit\n"
              "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
              "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
              "print(json.dumps([*raise_nofile_limit(), "
              "resource.getrlimit(resource.RLIMIT_NOFILE)[0]]))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=True)
    before, now, hard, actual = json.loads(out.stdout)
    assert before == 256
    assert now == actual and now > 256
    if hard != -1:  # RLIM_INFINITY: raised to a large value instead
        assert now == hard


def test_open_fds_counts_a_descriptor_this_process_opens(tmp_path: Path) -> None:
    before = open_fds()
    with (tmp_path / "f").open("w"):
        assert open_fds() == before + 1
    assert open_fds() == before

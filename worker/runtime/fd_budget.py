"""File descriptors as a budget, not a cliff.

Each task costs the worker about :data:`FDS_PER_TASK` descriptors (its Kafka client's
sockets and wake-up pipes, a sink's output file). When the process runs out, nothing says
so: a client that cannot open a socket retries forever while its task reports RUNNING,
and the REST listener drops new connections. So:

- at start, :func:`raise_nofile_limit` raises the soft ``RLIMIT_NOFILE`` to the hard limit
  and :func:`describe` says how many tasks that leaves room for;
- :meth:`FdBudget.check_task_start` refuses to start a task that would eat into the
  :data:`RESERVE_FDS` kept for the REST listener and the worker's own clients: the task
  fails with a trace that names the limit, and the worker logs one warning per shortage;
- :meth:`FdBudget.shortage` says whether the shortage lasts (``/health`` is unhealthy
  while it does).
"""

from __future__ import annotations

import logging
import os
import resource
from collections.abc import Callable

from worker.api.exceptions import ConnectException

log = logging.getLogger(__name__)

#: Descriptors a task costs, measured: ~7 with one broker (client sockets to the bootstrap
#: server, the broker and the group coordinator, librdkafka's wake-up pipes, a file). The
#: budget's floor: once MEASURE_AFTER_TASKS run, their measured average counts if larger
#: (a client keeps a socket per broker it talks to, so bigger clusters cost more).
FDS_PER_TASK = 8
MEASURE_AFTER_TASKS = 4
#: Kept free for the REST listener's connections, the internal clients, logs and SQLite.
RESERVE_FDS = 64


def raise_nofile_limit() -> tuple[int, int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns (soft before, soft now,
    hard). A limit the system does not let us raise stays as it was."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    before = soft
    if hard == resource.RLIM_INFINITY:
        target = max(soft, 1 << 20) if soft != resource.RLIM_INFINITY else soft
    else:
        target = hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("Could not raise the file descriptor limit from %d to %d: %s",
                        soft, target, exc)
    return before, soft, hard


def describe(before: int, soft: int, hard: int) -> str:
    """The start-up line: the limit and about how many tasks it allows."""
    raised = f"raised from {before}" if soft > before else "not raised"
    hard_text = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    return (f"File descriptor limit (RLIMIT_NOFILE): {soft} ({raised}; hard limit "
            f"{hard_text}): room for about {max(0, (soft - RESERVE_FDS) // FDS_PER_TASK)} "
            f"tasks at about {FDS_PER_TASK} each, {RESERVE_FDS} kept for the REST API and "
            "the worker's own clients")


def open_fds() -> int:
    """Descriptors this process has open (Linux's ``/proc/self/fd``, else ``/dev/fd`` as
    on macOS); 0 where neither lists them, and then the budget counts tasks alone."""
    for path in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(path))
        except OSError:
            continue
    return 0


class FdBudget:
    """The worker's admission check for task starts (one per worker; thread-safe enough:
    a race costs at most one task's descriptors, which the reserve covers).

    A task opens its client on its own thread, after its start was admitted, so what is
    open now undercounts tasks just started: the descriptors in use are taken as the larger
    of those open and the baseline (open when the budget was made) plus :meth:`per_task`
    per task the worker runs (``tasks``).
    """

    def __init__(self, limit: int | None = None, tasks: Callable[[], int] = lambda: 0,
                 count_open: Callable[[], int] = open_fds) -> None:
        self.limit = limit if limit is not None else resource.getrlimit(
            resource.RLIMIT_NOFILE)[0]
        self._tasks = tasks
        self._count_open = count_open
        self.baseline = count_open()
        self._shortage: str | None = None

    def per_task(self, tasks: int | None = None, open_now: int | None = None) -> int:
        """Descriptors a task costs on this worker: the running tasks' average above the
        baseline once :data:`MEASURE_AFTER_TASKS` run, never less than
        :data:`FDS_PER_TASK`."""
        tasks = self._tasks() if tasks is None else tasks
        if tasks < MEASURE_AFTER_TASKS:
            return FDS_PER_TASK
        open_now = self._count_open() if open_now is None else open_now
        return max(FDS_PER_TASK, -(-(open_now - self.baseline) // tasks))  # rounded up

    def _free(self) -> tuple[int, int, int]:
        """(in use, free, a task's cost)."""
        tasks, open_now = self._tasks(), self._count_open()
        per_task = self.per_task(tasks, open_now)
        used = max(open_now, self.baseline + per_task * tasks)
        return used, self.limit - used, per_task

    def check_task_start(self) -> None:
        """Raise ConnectException, naming the limit, if one more task would eat into the
        reserve; the first refusal of a shortage is logged as a warning."""
        if self.limit == resource.RLIM_INFINITY:
            return
        used, free, per_task = self._free()
        if free >= RESERVE_FDS + per_task:
            self._recovered()
            return
        message = (f"Not enough file descriptors to start a task: {used} of this worker's "
                   f"limit of {self.limit} (RLIMIT_NOFILE) are in use; a task needs about "
                   f"{per_task} and {RESERVE_FDS} are kept for the REST API and the "
                   "worker's own clients. Raise the limit (ulimit -n, systemd's "
                   "LimitNOFILE) or run fewer tasks on this worker")
        if self._shortage is None:
            log.warning("%s. Further task starts are refused while the shortage lasts",
                        message)
        self._shortage = message
        raise ConnectException(message)

    def shortage(self) -> str | None:
        """The shortage's message while descriptors are still short, else None."""
        if self._shortage is None:
            return None
        _, free, per_task = self._free()
        if free >= RESERVE_FDS + per_task:
            self._recovered()
            return None
        return self._shortage

    def _recovered(self) -> None:
        if self._shortage is not None:
            self._shortage = None
            log.info("File descriptors are available again (limit %d)", self.limit)

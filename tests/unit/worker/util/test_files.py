"""``worker.util.files``: a config-named path is read without waiting and within a limit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from worker.util.files import FileTooLargeError, NotRegularFileError, read_regular_file


def test_a_regular_file_is_read_whole_up_to_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "store.p12"
    path.write_bytes(b"x" * 100)
    assert read_regular_file(str(path), 100) == b"x" * 100
    with pytest.raises(FileTooLargeError):
        read_regular_file(str(path), 99)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFileError):
        read_regular_file(str(fifo), 1024)  # would block forever in a plain open()


def test_devices_and_directories_are_refused(tmp_path: Path) -> None:
    for path in ("/dev/zero", str(tmp_path)):
        with pytest.raises(NotRegularFileError):
            read_regular_file(path, 1024)


def test_a_missing_file_is_the_os_error() -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file("/no/such/file", 1024)


def test_a_file_whose_stat_says_nothing_is_read_within_the_limit() -> None:
    # /proc files report size 0: the limit still holds while reading.
    assert read_regular_file("/proc/self/status", 1 << 20).startswith(b"Name:")
    with pytest.raises(FileTooLargeError):
        read_regular_file("/proc/self/status", 10)

"""The fault suite's sequence checker on made-up sink output (no broker)."""

from __future__ import annotations

from tests.faults._pipeline import check_sequences, summarize


def _lines(*pairs: tuple[int, int]) -> list[str]:
    return [f"{task}-{seq:012d}-xx" for task, seq in pairs]


def test_clean_streams_report_nothing() -> None:
    reports = check_sequences(_lines((0, 0), (1, 0), (0, 1), (1, 1)), {0: 2, 1: 2})
    assert [(r.received, r.lost, r.duplicated, r.reordered) for r in reports.values()] == [
        (2, [], 0, 0), (2, [], 0, 0)]


def test_a_replay_is_duplication_not_reordering() -> None:
    # After a restart the sink gets 1 and 2 again: at-least-once, allowed.
    report = check_sequences(_lines((0, 0), (0, 1), (0, 2), (0, 1), (0, 2), (0, 3)),
                             {0: 4})[0]
    assert (report.lost, report.duplicated, report.reordered) == ([], 2, 0)


def test_a_gap_filled_late_is_reordering() -> None:
    report = check_sequences(_lines((0, 0), (0, 2), (0, 1)), {0: 3})[0]
    assert (report.lost, report.duplicated, report.reordered) == ([], 0, 1)


def test_missing_numbers_are_lost_even_past_the_highest_seen() -> None:
    report = check_sequences(_lines((0, 0), (0, 2)), {0: 5})[0]
    assert report.lost == [1, 3, 4]
    assert "lost=3 duplicated=0 reordered=0" in summarize("x", {0: report})

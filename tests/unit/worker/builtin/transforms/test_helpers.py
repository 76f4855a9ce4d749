"""KIP-821 field paths and the SimpleDateFormat subset the SMTs share."""

from __future__ import annotations

import datetime as dt

import pytest

from worker.api import ConfigException
from worker.builtin.transforms._field_path import V1, V2, Leaf, build_trie, parse_path
from worker.builtin.transforms._java_date_format import (
    InvalidPatternError,
    UnsupportedPatternError,
    compile_pattern,
)

# --- field paths (Kafka's FieldPathNotationTest) ----------------------------------------


@pytest.mark.parametrize("text", ["foo.bar.baz", "foo`bar`", "foo.`bar.baz`"])
def test_v1_is_one_step(text: str) -> None:
    assert parse_path(text, V1, "f") == (text,)


@pytest.mark.parametrize("text, steps", [
    ("..", ("", "", "")), ("foo..", ("foo", "", "")), (".bar.", ("", "bar", "")),
    ("foobarbaz", ("foobarbaz",)), ("foo.bar.baz", ("foo", "bar", "baz")),
    ("foo`bar`baz", ("foo`bar`baz",)),
    ("`foo.bar.baz`", ("foo.bar.baz",)), ("foo.`bar.baz`", ("foo", "bar.baz")),
    ("`foo.bar`.baz", ("foo.bar", "baz")), ("foo.`bar`.baz", ("foo", "bar", "baz")),
    ("foo.``bar.baz`", ("foo", "`bar.baz")), ("foo.`bar.baz``", ("foo", "bar.baz`")),
    ("foo.`ba`r.baz`", ("foo", "ba`r.baz")), ("foo.ba`r.baz", ("foo", "ba`r", "baz")),
    ("foo.``bar``.baz", ("foo", "`bar`", "baz")), ("``foo.bar.baz``", ("`foo.bar.baz`",)),
    ("foo.`bar\\`.baz`", ("foo", "bar`.baz")), ("foo.`bar.`baz`", ("foo", "bar.`baz")),
    ("foo.`bar\\`.`baz`", ("foo", "bar`.`baz")),
    ("foo.`bar\\\\`.\\`baz`", ("foo", "bar\\`.\\`baz")),
])
def test_v2_steps(text: str, steps: tuple[str, ...]) -> None:
    assert parse_path(text, V2, "f") == steps


@pytest.mark.parametrize("text, position", [
    ("`foo.bar.baz", 0), ("foo.`bar.baz", 4), ("foo.bar.`baz", 8), ("foo.bar.`baz\\`", 8)])
def test_v2_incomplete_backticks(text: str, position: int) -> None:
    with pytest.raises(ConfigException) as info:
        parse_path(text, V2, "fields")
    assert info.value.name == "fields"
    assert info.value.reason == (f"Incomplete backtick pair in path: [{text}], consider adding "
                                 f"a backslash before backtick at position {position} to "
                                 f"escape it")


def test_trie_prefers_the_shorter_path() -> None:
    assert build_trie([(("a", "b"), 1), (("a",), 2), (("a", "c"), 3), (("d", "e"), 4)]) == \
        {"a": Leaf(2), "d": {"e": Leaf(4)}}


# --- SimpleDateFormat -------------------------------------------------------------------

INSTANT = dt.datetime(2001, 7, 4, 19, 8, 56, 235000, tzinfo=dt.UTC)


@pytest.mark.parametrize("pattern, text", [
    ("yyyy.MM.dd G 'at' HH:mm:ss z", "2001.07.04 AD at 19:08:56 UTC"),
    ("EEE, MMM d, ''yy", "Wed, Jul 4, '01"),
    ("h:mm a", "7:08 PM"),
    ("hh 'o''clock' a, zzzz", "07 o'clock PM, Coordinated Universal Time"),
    ("K:mm a, z", "7:08 PM, UTC"),
    ("yyyyy.MMMMM.dd GGG hh:mm aaa", "02001.July.04 AD 07:08 PM"),
    ("EEE, d MMM yyyy HH:mm:ss Z", "Wed, 4 Jul 2001 19:08:56 +0000"),
    ("yyMMddHHmmssZ", "010704190856+0000"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2001-07-04T19:08:56.235+0000"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2001-07-04T19:08:56.235Z"),
    ("YYYY", None), ("D u k", "185 3 19"),
])
def test_format_javadoc_examples(pattern: str, text: str | None) -> None:
    if text is None:
        with pytest.raises(UnsupportedPatternError):
            compile_pattern(pattern)
    else:
        assert compile_pattern(pattern).format(INSTANT) == text


@pytest.mark.parametrize("pattern, text, expected", [
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2001-07-04T12:08:56.235-0700", INSTANT),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2001-07-04T21:08:56.235+02:00", INSTANT),
    ("yyyyMMddHHmmss", "20010704190856", INSTANT.replace(microsecond=0)),
    ("EEE, d MMM yyyy", "wed, 4 july 2001 and more", dt.datetime(2001, 7, 4, tzinfo=dt.UTC)),
    ("yyyy-MM-dd", "2001-13-32", dt.datetime(2002, 2, 1, tzinfo=dt.UTC)),  # lenient
    ("hh:mm a", "12:30 AM", dt.datetime(1970, 1, 1, 0, 30, tzinfo=dt.UTC)),
    ("HH:mm z", "10:00 GMT-02:30", dt.datetime(1970, 1, 1, 12, 30, tzinfo=dt.UTC)),
])
def test_parse(pattern: str, text: str, expected: dt.datetime) -> None:
    assert compile_pattern(pattern).parse(text) == expected


def test_parse_two_digit_years_within_80_years_back() -> None:
    now = dt.datetime.now(dt.UTC).year
    parsed = compile_pattern("yy").parse(f"{(now + 1) % 100:02d}").year
    assert parsed == now + 1
    assert compile_pattern("yy").parse(f"{(now - 79) % 100:02d}").year == now - 79


@pytest.mark.parametrize("pattern, text", [("yyyy-MM-dd", "2001/07/04"), ("HH:mm z", "10:00 PST")])
def test_parse_failures(pattern: str, text: str) -> None:
    with pytest.raises(ValueError):
        compile_pattern(pattern).parse(text)


@pytest.mark.parametrize("pattern, message", [
    ("yyyy-bb", "Illegal pattern character 'b'"), ("'x", "Unterminated quote"),
    ("XXXX", "invalid ISO 8601 format: length=4"),
])
def test_invalid_patterns(pattern: str, message: str) -> None:
    with pytest.raises(InvalidPatternError, match=message):
        compile_pattern(pattern)

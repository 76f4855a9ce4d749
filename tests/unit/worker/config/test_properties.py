"""worker.config.properties: java.util.Properties parsing and connector config files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.config.properties import (
    load_connector_config,
    load_connector_file,
    load_properties,
    parse_properties,
)
from worker.errors import ConfigError


class TestSeparators:
    @pytest.mark.parametrize(("line", "key", "value"), [
        ("a=1", "a", "1"),
        ("a:1", "a", "1"),
        ("a 1", "a", "1"),
        ("a\t1", "a", "1"),
        ("a = 1", "a", "1"),
        ("a : 1", "a", "1"),
        ("a    1", "a", "1"),
        ("a \t = \t 1", "a", "1"),
        ("a==1", "a", "=1"),          # only the first separator is consumed
        ("a = = 1", "a", "= 1"),
        ("a:=1", "a", "=1"),
        ("a=b=c", "a", "b=c"),
        ("url=http://h:8083/x", "url", "http://h:8083/x"),
        ("   indented=yes", "indented", "yes"),
    ])
    def test_key_value_split(self, line: str, key: str, value: str) -> None:
        assert parse_properties(line) == {key: value}

    @pytest.mark.parametrize("line", ["key", "key=", "key:", "key   ", "key = "])
    def test_blank_value(self, line: str) -> None:
        assert parse_properties(line) == {"key": ""}

    def test_trailing_whitespace_of_value_is_kept(self) -> None:
        assert parse_properties("a=b  \t") == {"a": "b  \t"}

    def test_form_feed_is_a_separator(self) -> None:
        assert parse_properties("key\fvalue") == {"key": "value"}

    def test_unicode_line_separator_stays_in_value(self) -> None:
        assert parse_properties("a=x\u2028y") == {"a": "x\u2028y"}


class TestCommentsAndLines:
    def test_comments_and_blank_lines_are_skipped(self) -> None:
        text = "# hash comment\n! bang comment\n\n   # indented comment\n\t\na=1\n"
        assert parse_properties(text) == {"a": "1"}

    def test_hash_inside_value_is_not_a_comment(self) -> None:
        assert parse_properties("a=b # not a comment") == {"a": "b # not a comment"}

    def test_crlf_and_cr_line_endings(self) -> None:
        assert parse_properties("a=1\r\nb=2\rc=3") == {"a": "1", "b": "2", "c": "3"}

    def test_duplicate_key_last_wins(self) -> None:
        assert parse_properties("a=1\nb=2\na=3") == {"a": "3", "b": "2"}


class TestContinuation:
    def test_odd_trailing_backslash_continues_and_strips_indent(self) -> None:
        text = "plugin.path=/opt/a,\\\n    /opt/b,\\\n\t/opt/c\nnext=1"
        assert parse_properties(text) == {"plugin.path": "/opt/a,/opt/b,/opt/c", "next": "1"}

    def test_even_trailing_backslashes_do_not_continue(self) -> None:
        text = "a=x\\\\\nb=y"
        assert parse_properties(text) == {"a": "x\\", "b": "y"}

    def test_three_backslashes_continue_after_an_escaped_backslash(self) -> None:
        text = "a=x\\\\\\\n  y"
        assert parse_properties(text) == {"a": "x\\y"}

    def test_continued_line_starting_with_hash_is_not_a_comment(self) -> None:
        assert parse_properties("a=x\\\n#y") == {"a": "x#y"}

    def test_comment_line_with_trailing_backslash_does_not_continue(self) -> None:
        assert parse_properties("# comment \\\na=1") == {"a": "1"}

    def test_blank_line_ends_a_continuation(self) -> None:
        assert parse_properties("a=x\\\n\nb=y") == {"a": "x", "b": "y"}

    def test_backslash_at_end_of_input_is_dropped(self) -> None:
        assert parse_properties("a=x\\") == {"a": "x"}

    def test_key_continued_onto_next_line(self) -> None:
        assert parse_properties("long\\\n  key=v") == {"longkey": "v"}


class TestEscapes:
    def test_unicode_escapes_in_key_and_value(self) -> None:
        assert parse_properties("\\u0041b=caf\\u00E9") == {"Ab": "café"}

    def test_character_escapes(self) -> None:
        assert parse_properties("a=1\\t2\\n3\\r4\\f5") == {"a": "1\t2\n3\r4\f5"}

    def test_escaped_backslash_and_unknown_escape(self) -> None:
        assert parse_properties("path=C:\\\\dir\\q") == {"path": "C:\\dirq"}

    @pytest.mark.parametrize(("line", "key", "value"), [
        ("my\\ key=v", "my key", "v"),
        ("a\\=b=c", "a=b", "c"),
        ("a\\:b:c", "a:b", "c"),
        ("a\\ b c", "a b", "c"),
        ("tab\\\tkey v", "tab\tkey", "v"),
    ])
    def test_escaped_separators_in_key(self, line: str, key: str, value: str) -> None:
        assert parse_properties(line) == {key: value}

    def test_escaped_leading_space_in_value_is_kept(self) -> None:
        assert parse_properties("a=\\  b") == {"a": "  b"}

    def test_non_ascii_text_passes_through(self) -> None:
        assert parse_properties("greeting=héllo wörld") == {"greeting": "héllo wörld"}


class TestMalformedUnicodeEscape:
    @pytest.mark.parametrize("bad", ["\\u12zz", "\\u12", "\\u"])
    def test_in_key_names_source_and_line(self, bad: str) -> None:
        text = f"# header\nok=1\n{bad}key=v\n"

        with pytest.raises(ConfigError) as info:
            parse_properties(text, "worker.properties")

        assert info.value.key == "worker.properties:3"
        assert "worker.properties:3" in str(info.value)
        assert "\\uxxxx" in str(info.value)

    def test_in_key_after_continuation_names_first_line(self) -> None:
        with pytest.raises(ConfigError) as info:
            parse_properties("a=1\nbad\\\n  \\uZZZZ=v", "f.properties")
        assert info.value.key == "f.properties:2"

    def test_in_value_names_the_key(self) -> None:
        with pytest.raises(ConfigError) as info:
            parse_properties("ok=1\nsecret.path=\\u00G1\n", "c.properties")

        assert info.value.key == "secret.path"
        assert "secret.path" in str(info.value)

    def test_in_value_names_source_and_line(self) -> None:
        with pytest.raises(ConfigError) as info:
            parse_properties("ok=1\nsecret.path=\\u00G1\n", "c.properties")
        assert "c.properties:2" in str(info.value)


class TestLoadProperties:
    def test_reads_utf8_file(self, tmp_path: Path) -> None:
        path = tmp_path / "worker.properties"
        path.write_text("bootstrap.servers=localhost:9092\nclient.id=wörker\n",
                        encoding="utf-8")

        assert load_properties(path) == {"bootstrap.servers": "localhost:9092",
                                         "client.id": "wörker"}

    def test_error_location_uses_path(self, tmp_path: Path) -> None:
        path = tmp_path / "w.properties"
        path.write_text("a=1\n\\uXYZW=2\n", encoding="utf-8")

        with pytest.raises(ConfigError) as info:
            load_properties(path)
        assert info.value.key == f"{path}:2"

    def test_missing_file(self, tmp_path: Path) -> None:
        path = tmp_path / "absent.properties"

        with pytest.raises(ConfigError, match="cannot read file") as info:
            load_properties(path)
        assert info.value.key == str(path)

    def test_invalid_utf8(self, tmp_path: Path) -> None:
        path = tmp_path / "latin1.properties"
        path.write_bytes(b"a=caf\xe9\n")

        with pytest.raises(ConfigError, match="UTF-8") as info:
            load_properties(path)
        assert info.value.key == str(path)


class TestLoadConnectorConfig:
    def test_properties_file(self, tmp_path: Path) -> None:
        path = tmp_path / "c.properties"
        path.write_text("name=local-file-source\nconnector.class=FileStreamSource\n"
                        "tasks.max=1\n", encoding="utf-8")

        assert load_connector_config(path) == {"name": "local-file-source",
                                               "connector.class": "FileStreamSource",
                                               "tasks.max": "1"}

    def test_any_non_json_suffix_is_properties(self, tmp_path: Path) -> None:
        path = tmp_path / "connector.conf"
        path.write_text("name: n\n", encoding="utf-8")

        assert load_connector_config(path) == {"name": "n"}

    def test_json_flat_map_stringifies_values(self, tmp_path: Path) -> None:
        path = tmp_path / "c.json"
        path.write_text(json.dumps({
            "name": "n", "tasks.max": 3, "errors.log.enable": True, "flag.off": False,
            "ratio": 1.5, "file": None, "topics": ["a", "b"],
        }), encoding="utf-8")

        assert load_connector_config(path) == {
            "name": "n", "tasks.max": "3", "errors.log.enable": "true", "flag.off": "false",
            "ratio": "1.5", "file": "", "topics": "a,b",
        }

    def test_json_create_request_form(self, tmp_path: Path) -> None:
        path = tmp_path / "c.json"
        path.write_text(json.dumps({"name": "outer", "config": {
            "connector.class": "FileStreamSink", "tasks.max": 2, "topics": "t"}}),
            encoding="utf-8")

        assert load_connector_config(path) == {"name": "outer",
                                               "connector.class": "FileStreamSink",
                                               "tasks.max": "2", "topics": "t"}

    def test_format_is_told_by_content_not_suffix(self, tmp_path: Path) -> None:
        path = tmp_path / "connector.conf"
        path.write_text(' \n{"name": "n", "tasks.max": 2}', encoding="utf-8")

        assert load_connector_config(path) == {"name": "n", "tasks.max": "2"}

    def test_create_request_initial_state(self, tmp_path: Path) -> None:
        path = tmp_path / "c.json"
        path.write_text(json.dumps({"name": "n", "initial_state": "paused",
                                    "config": {"a": "1"}}), encoding="utf-8")

        loaded = load_connector_file(path)

        assert loaded.config == {"name": "n", "a": "1"}
        assert loaded.initial_state == "PAUSED"

    @pytest.mark.parametrize("state", ["running-ish", 3])
    def test_create_request_bad_initial_state(self, tmp_path: Path, state: object) -> None:
        path = tmp_path / "c.json"
        path.write_text(json.dumps({"name": "n", "initial_state": state, "config": {}}),
                        encoding="utf-8")

        with pytest.raises(ConfigError, match="initial_state must be one of RUNNING, "
                                              "PAUSED, STOPPED"):
            load_connector_file(path)

    def test_properties_file_has_no_initial_state(self, tmp_path: Path) -> None:
        path = tmp_path / "c.properties"
        path.write_text("name=n\n", encoding="utf-8")

        assert load_connector_file(path).initial_state is None

    def test_json_create_request_form_with_same_name_inside(self, tmp_path: Path) -> None:
        path = tmp_path / "c.json"
        path.write_text(json.dumps({"name": "n", "config": {"name": "n", "a": "1"}}),
                        encoding="utf-8")

        assert load_connector_config(path) == {"name": "n", "a": "1"}

    def test_json_create_request_form_name_mismatch(self, tmp_path: Path) -> None:
        path = tmp_path / "c.json"
        path.write_text(json.dumps({"name": "outer", "config": {"name": "inner"}}),
                        encoding="utf-8")

        with pytest.raises(ConfigError):
            load_connector_config(path)

    def test_uppercase_json_suffix(self, tmp_path: Path) -> None:
        path = tmp_path / "C.JSON"
        path.write_text('{"name": "n"}', encoding="utf-8")

        assert load_connector_config(path) == {"name": "n"}

    @pytest.mark.parametrize("text", ["{not json", "", '{"a": 1,}'])
    def test_invalid_json(self, tmp_path: Path, text: str) -> None:
        path = tmp_path / "bad.json"
        path.write_text(text, encoding="utf-8")

        with pytest.raises(ConfigError, match="not valid JSON") as info:
            load_connector_config(path)
        assert info.value.key == str(path)

    @pytest.mark.parametrize("text", ['["a", "b"]', '"just a string"', "42"])
    def test_json_that_is_not_an_object(self, tmp_path: Path, text: str) -> None:
        path = tmp_path / "list.json"
        path.write_text(text, encoding="utf-8")

        with pytest.raises(ConfigError, match="expected a JSON object"):
            load_connector_config(path)

    def test_missing_json_file(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="cannot read file"):
            load_connector_config(tmp_path / "absent.json")

    def test_missing_properties_file(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="cannot read file"):
            load_connector_config(tmp_path / "absent.properties")


def test_a_line_without_a_key_is_refused_without_showing_it() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_properties("=Hunter2-Secret-Value\n", "worker.properties")
    assert "worker.properties:1" in str(refused.value)
    assert "Hunter2" not in str(refused.value)

"""worker.api.config_def: type parsing, Password hiding, validators, parse and validate."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from worker.api.config_def import (
    NO_DEFAULT,
    ConfigDef,
    ConfigValue,
    Importance,
    Password,
    Type,
    Width,
    at_least,
    in_range,
    non_empty_string,
    non_empty_string_without_control_chars,
    one_of,
    parse_type,
    valid_regex,
)
from worker.api.exceptions import ConfigException

SECRET = "hunter2-s3cr3t"


def reject(name: str, value: Any) -> None:
    raise ConfigException(name, value, "rejected")


# --- parse_type -------------------------------------------------------------------------

class TestBoolean:
    @pytest.mark.parametrize(("raw", "expected"), [
        ("true", True), ("false", False), ("TRUE", True), (" False ", False),
        (True, True), (False, False),
    ])
    def test_accepted(self, raw: Any, expected: bool) -> None:
        assert parse_type("flag", raw, Type.BOOLEAN) is expected

    @pytest.mark.parametrize("raw", ["yes", "1", "", "t"])
    def test_rejected(self, raw: str) -> None:
        with pytest.raises(ConfigException, match="either true or false") as info:
            parse_type("flag", raw, Type.BOOLEAN)
        assert info.value.name == "flag"


class TestIntegers:
    @pytest.mark.parametrize(("type_", "low", "high"), [
        (Type.SHORT, -(2**15), 2**15 - 1),
        (Type.INT, -(2**31), 2**31 - 1),
        (Type.LONG, -(2**63), 2**63 - 1),
    ])
    def test_bounds_inclusive(self, type_: Type, low: int, high: int) -> None:
        assert parse_type("n", str(low), type_) == low
        assert parse_type("n", str(high), type_) == high
        for outside in (low - 1, high + 1):
            with pytest.raises(ConfigException, match=f"Not a number of type {type_.value}"):
                parse_type("n", str(outside), type_)

    def test_whitespace_is_trimmed(self) -> None:
        assert parse_type("n", " 42 ", Type.INT) == 42

    def test_python_int_passes_through(self) -> None:
        assert parse_type("n", 7, Type.LONG) == 7

    @pytest.mark.parametrize("raw", ["abc", "1.5", "", 1.9, True])
    def test_not_a_number(self, raw: Any) -> None:
        with pytest.raises(ConfigException, match="Not a number of type INT") as info:
            parse_type("n", raw, Type.INT)
        assert info.value.name == "n"
        assert info.value.value == raw

    def test_underscores_are_not_digits(self) -> None:
        with pytest.raises(ConfigException):
            parse_type("n", "1_000", Type.INT)


class TestOtherTypes:
    def test_double(self) -> None:
        assert parse_type("d", " 2.5 ", Type.DOUBLE) == 2.5
        assert parse_type("d", "3", Type.DOUBLE) == 3.0
        with pytest.raises(ConfigException, match="Not a number of type DOUBLE"):
            parse_type("d", "two", Type.DOUBLE)

    def test_string_and_class_are_trimmed(self) -> None:
        assert parse_type("s", "  text ", Type.STRING) == "text"
        assert parse_type("c", " a.b.C ", Type.CLASS) == "a.b.C"
        assert parse_type("s", 12, Type.STRING) == "12"

    @pytest.mark.parametrize(("raw", "expected"), [
        ("a,b,c", ["a", "b", "c"]),
        (" a , b ", ["a", "b"]),
        ("single", ["single"]),
        ("", []),
        ("   ", []),
        ("a,,b", ["a", "", "b"]),
        (["x ", " y"], ["x", "y"]),
        (("t",), ["t"]),
    ])
    def test_list(self, raw: Any, expected: list[str]) -> None:
        assert parse_type("l", raw, Type.LIST) == expected

    @pytest.mark.parametrize("type_", list(Type))
    def test_none_stays_none(self, type_: Type) -> None:
        assert parse_type("k", None, type_) is None

    def test_password_is_wrapped(self) -> None:
        parsed = parse_type("db.password", SECRET, Type.PASSWORD)

        assert isinstance(parsed, Password)
        assert parsed.value == SECRET


# --- Password and ConfigException ----------------------------------------------------------

class TestPasswordHiding:
    def test_repr_str_and_formatting_hide_the_secret(self) -> None:
        password = Password(SECRET)

        # What logging does with "%s" arguments, too.
        logged = logging.LogRecord("t", logging.INFO, __file__, 1, "pw=%s %r",
                                   (password, password), None).getMessage()
        for shown in (repr(password), str(password), f"{password}", format(password, ""),
                      logged, repr([password]), repr({"k": password})):
            assert SECRET not in shown
            assert "[hidden]" in shown

    def test_value_reveals_it(self) -> None:
        assert Password(SECRET).value == SECRET

    def test_secret_looking_name_hides_value_in_exception(self) -> None:
        for name in ("database.password", "api.secret", "auth.token", "aws.credentials"):
            exc = ConfigException(name, SECRET, "bad")
            assert SECRET not in str(exc)
            assert "[hidden]" in str(exc)
            assert exc.name == name

    def test_password_typed_value_hidden_in_exception_whatever_the_name(self) -> None:
        definition = ConfigDef().define("ssl.key", Type.PASSWORD, None, Importance.HIGH,
                                        "Private key.", validator=reject)

        with pytest.raises(ConfigException) as info:
            definition.parse({"ssl.key": SECRET})

        assert SECRET not in str(info.value)
        assert "ssl.key" in str(info.value)
        assert info.value.reason == "rejected"

    def test_validate_error_message_hides_password(self) -> None:
        definition = ConfigDef().define("ssl.key", Type.PASSWORD, None, Importance.HIGH,
                                        "Private key.", validator=reject)

        outcome = definition.validate({"ssl.key": SECRET})["ssl.key"]

        assert outcome.errors and all(SECRET not in e for e in outcome.errors)

    def test_validate_keeps_rejected_password_wrapped(self) -> None:
        definition = ConfigDef().define("ssl.key", Type.PASSWORD, None, Importance.HIGH,
                                        "Private key.", validator=reject)

        outcome = definition.validate({"ssl.key": SECRET})["ssl.key"]

        assert SECRET not in repr(outcome)

    def test_exception_message_shows_non_secret_values(self) -> None:
        exc = ConfigException("batch.size", "abc", "Not a number of type INT")

        assert str(exc) == "Invalid value abc for configuration batch.size: " \
                           "Not a number of type INT"
        assert (exc.name, exc.value, exc.reason) == ("batch.size", "abc",
                                                     "Not a number of type INT")

    def test_exception_is_a_value_error(self) -> None:
        assert isinstance(ConfigException("k"), ValueError)
        assert ConfigException("k").reason == "Invalid value"


# --- validators -------------------------------------------------------------------------

class TestValidators:
    def test_at_least(self) -> None:
        check = at_least(1)
        check("n", 1)
        with pytest.raises(ConfigException, match="at least 1") as info:
            check("n", 0)
        assert info.value.name == "n"

    def test_in_range(self) -> None:
        check = in_range(0, 10)
        check("n", 0)
        check("n", 10)
        for bad in (-1, 11):
            with pytest.raises(ConfigException, match="no less than 0 and no more than 10"):
                check("n", bad)

    def test_one_of_ignores_case_by_default(self) -> None:
        check = one_of("none", "all")
        check("t", "ALL")
        with pytest.raises(ConfigException, match="String must be one of: none, all"):
            check("t", "some")

    def test_one_of_case_sensitive(self) -> None:
        check = one_of("None", "All", case_sensitive=True)
        check("p", "All")
        with pytest.raises(ConfigException, match="None, All"):
            check("p", "all")

    @pytest.mark.parametrize("bad", ["", "   ", "\t"])
    def test_non_empty_string(self, bad: str) -> None:
        check = non_empty_string()
        check("s", "x")
        with pytest.raises(ConfigException, match="may not be empty"):
            check("s", bad)

    @pytest.mark.parametrize(("bad", "codes"), [("a\u0001b", "1"), ("\tx\n", "9, 10"),
                                                ("x\u007f\u009f", "127, 159")])
    def test_connector_names_refuse_iso_control_characters(self, bad: str,
                                                            codes: str) -> None:
        check = non_empty_string_without_control_chars()
        check("name", "orders \u00e9t\u00e9 \u00a0ok")  # above U+009F: fine
        with pytest.raises(ConfigException, match="may not be empty"):
            check("name", "  ")
        with pytest.raises(ConfigException) as raised:
            check("name", bad)
        assert str(raised.value).endswith(
            f"String may not contain control sequences but had the following ASCII chars: "
            f"{codes}")

    def test_non_empty_string_on_empty_password(self) -> None:
        definition = ConfigDef().define("db.password", Type.PASSWORD, NO_DEFAULT,
                                        Importance.HIGH, "Password.",
                                        validator=non_empty_string())
        with pytest.raises(ConfigException):
            definition.parse({"db.password": "  "})

    def test_valid_regex(self) -> None:
        check = valid_regex()
        check("r", "topic-.*")
        with pytest.raises(ConfigException, match="Invalid regular expression"):
            check("r", "(unclosed")


# --- ConfigDef ---------------------------------------------------------------------------

def sample_def() -> ConfigDef:
    return (
        ConfigDef()
        .define("topic", Type.STRING, NO_DEFAULT, Importance.HIGH, "Topic.",
                validator=non_empty_string())
        .define("batch.size", Type.INT, 100, Importance.LOW, "Batch.", validator=at_least(1))
        .define("enabled", Type.BOOLEAN, False, Importance.LOW, "On?")
        .define("hosts", Type.LIST, "a,b", Importance.MEDIUM, "Hosts.", group="Net",
                order_in_group=2, width=Width.LONG, display_name="Hosts",
                dependents=("port",))
        .define("optional.thing", Type.STRING, None, Importance.LOW, "Maybe.",
                validator=reject)
    )


class TestConfigDef:
    def test_parse_types_defaults_and_passthrough(self) -> None:
        parsed = sample_def().parse({"topic": " t ", "enabled": "TRUE", "extra.key": "kept"})

        assert parsed == {"topic": "t", "batch.size": 100, "enabled": True,
                          "hosts": ["a", "b"], "optional.thing": None, "extra.key": "kept"}

    def test_missing_required_key(self) -> None:
        with pytest.raises(ConfigException) as info:
            sample_def().parse({})

        assert info.value.name == "topic"
        assert 'Missing required configuration "topic" which has no default value.' \
            in str(info.value)

    def test_validator_is_not_called_for_none(self) -> None:
        # optional.thing's validator rejects everything, but its value is None.
        assert sample_def().parse({"topic": "t"})["optional.thing"] is None

    def test_validator_runs_on_parsed_value(self) -> None:
        with pytest.raises(ConfigException, match="at least 1") as info:
            sample_def().parse({"topic": "t", "batch.size": "0"})
        assert info.value.name == "batch.size"

    def test_parse_raises_for_bad_type_naming_key(self) -> None:
        with pytest.raises(ConfigException) as info:
            sample_def().parse({"topic": "t", "enabled": "maybe"})
        assert info.value.name == "enabled"

    def test_validate_collects_every_error_without_raising(self) -> None:
        results = sample_def().validate({"batch.size": "-3", "enabled": "maybe",
                                         "optional.thing": "x", "unknown": "u"})

        assert list(results) == ["topic", "batch.size", "enabled", "hosts", "optional.thing"]
        assert ["Missing required" in e for e in results["topic"].errors] == [True]
        assert len(results["batch.size"].errors) == 1
        assert len(results["enabled"].errors) == 1
        assert len(results["optional.thing"].errors) == 1
        assert results["hosts"] == ConfigValue("hosts", ["a", "b"], [], [], True)

    def test_validate_good_values_are_parsed(self) -> None:
        results = sample_def().validate({"topic": "t", "batch.size": "5", "hosts": "x, y"})

        assert results["topic"].value == "t" and results["topic"].errors == []
        assert results["batch.size"].value == 5
        assert results["hosts"].value == ["x", "y"]
        assert results["enabled"].value is False

    def test_validate_keeps_raw_value_when_parsing_fails(self) -> None:
        outcome = sample_def().validate({"topic": "t", "batch.size": "lots"})["batch.size"]

        assert outcome.value == "lots"
        assert outcome.errors == ["Invalid value lots for configuration batch.size: "
                                  "Not a number of type INT"]

    def test_define_twice_is_refused(self) -> None:
        with pytest.raises(ValueError, match="defined twice"):
            ConfigDef().define("a", Type.INT, 1, Importance.LOW, "").define(
                "a", Type.INT, 2, Importance.LOW, "")

    def test_bad_default_fails_at_define(self) -> None:
        with pytest.raises(ConfigException, match="Not a number of type INT"):
            ConfigDef().define("n", Type.INT, "abc", Importance.LOW, "")

    def test_defaults_are_parsed_at_define(self) -> None:
        keys = ConfigDef().define("n", Type.INT, "5", Importance.LOW, "").keys
        assert keys["n"].default == 5

    def test_key_metadata(self) -> None:
        keys = sample_def().keys
        hosts = keys["hosts"]

        assert keys["topic"].required and not hosts.required
        assert (hosts.group, hosts.order_in_group, hosts.width, hosts.display_name,
                hosts.dependents) == ("Net", 2, Width.LONG, "Hosts", ("port",))
        assert keys["topic"].display_name == "topic"  # defaults to the key name

    def test_merge_keeps_order_and_other_wins(self) -> None:
        first = (ConfigDef().define("a", Type.INT, 1, Importance.LOW, "")
                 .define("b", Type.INT, 2, Importance.LOW, ""))
        second = (ConfigDef().define("b", Type.STRING, "x", Importance.HIGH, "")
                  .define("c", Type.INT, 3, Importance.LOW, ""))

        merged = first.merge(second)

        assert merged.names() == ["a", "b", "c"]
        assert merged.keys["b"].type is Type.STRING
        assert first.names() == ["a", "b"]  # merge builds a new definition

    def test_keys_is_a_copy(self) -> None:
        definition = sample_def()
        definition.keys.pop("topic")
        assert "topic" in definition.names()


class TestDefaultString:
    @pytest.mark.parametrize(("type_", "default", "expected"), [
        (Type.STRING, NO_DEFAULT, None),
        (Type.STRING, None, None),
        (Type.STRING, "x", "x"),
        (Type.INT, 5, "5"),
        (Type.LONG, "60000", "60000"),
        (Type.DOUBLE, 1.5, "1.5"),
        (Type.BOOLEAN, True, "true"),
        (Type.BOOLEAN, "false", "false"),
        (Type.LIST, "a, b", "a,b"),
        (Type.LIST, "", ""),
        (Type.CLASS, "org.Example", "org.Example"),
        # Kafka renders a password default through Password.toString(): "[hidden]".
        (Type.PASSWORD, SECRET, "[hidden]"),
    ])
    def test_rendering(self, type_: Type, default: Any, expected: str | None) -> None:
        key = ConfigDef().define("k", type_, default, Importance.LOW, "").keys["k"]
        assert key.default_string == expected

"""The "is this key a secret" rule and the scrubbing of messages and log records."""

from __future__ import annotations

import logging
import sys

import pytest

from worker.api.config_def import ConfigDef, Importance, Password, Type
from worker.api.exceptions import ConfigException
from worker.util import secrets
from worker.util.secrets import (
    HIDDEN,
    KnownSecrets,
    is_secret,
    redact,
    redact_record,
    secret_values,
    unprefixed_names,
)

SECRET = "s3cr3t-Value-77"


class TestIsSecret:
    @pytest.mark.parametrize("key", [
        # Kafka's PASSWORD client keys, bare and under every pass-through prefix
        "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password",
        "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
        "sasl.jaas.config",
        "producer.ssl.key.password", "consumer.sasl.jaas.config", "admin.ssl.keystore.key",
        "producer.override.sasl.jaas.config", "consumer.override.ssl.truststore.password",
        "admin.override.ssl.key.password",
        "listeners.https.ssl.keystore.password", "admin.listeners.https.ssl.key.password",
        "key.converter.basic.auth.user.info", "value.converter.ssl.truststore.password",
        "header.converter.bearer.auth.token",
        "transforms.route.ssl.key.password", "predicates.p.sasl.jaas.config",
        # librdkafka's sensitive properties
        "sasl.password", "consumer.sasl.password", "producer.override.ssl.key.pem",
        "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config",
    ])
    def test_secret_client_keys(self, key: str) -> None:
        assert is_secret(key)
        # Whatever a plugin's definition says: Kafka's clients type these PASSWORD.
        assert is_secret(key, "STRING")

    @pytest.mark.parametrize("key", [
        "bootstrap.servers", "producer.linger.ms", "consumer.override.group.id",
        "ssl.keystore.location", "ssl.truststore.type", "sasl.mechanism",
        "listeners.https.ssl.client.auth", "value.converter.schemas.enable", "topics",
        "connector.class", "name", "tasks.max",
    ])
    def test_ordinary_keys(self, key: str) -> None:
        assert not is_secret(key)
        assert not is_secret(key, Type.STRING)

    def test_password_type_decides_where_defined(self) -> None:
        assert is_secret("connection.url", Type.PASSWORD)
        assert is_secret("connection.url", "PASSWORD")
        # A defined non-PASSWORD key is no secret, whatever its name (as in Kafka) ...
        assert not is_secret("token.count", Type.INT)
        # ... an undefined one is, if its name says so.
        for key in ("db.password", "api.secret", "auth.token", "aws.credentials",
                    "my.jaas.file", "signing.private.key"):
            assert is_secret(key), key

    def test_unprefixed_names(self) -> None:
        assert unprefixed_names("consumer.override.sasl.password") == [
            "consumer.override.sasl.password", "sasl.password"]
        assert unprefixed_names("transforms.x.producer.ssl.key.password")[-1] == \
            "ssl.key.password"
        assert unprefixed_names("name") == ["name"]

    def test_secret_values(self) -> None:
        config = {"db.password": SECRET, "producer.override.sasl.password": "other-secret",
                  "login": Password("pw-in-a-Password"), "topics": "orders",
                  "empty.password": ""}
        assert secret_values(config, {"login": Type.PASSWORD, "topics": Type.LIST}) == {
            SECRET, "other-secret", "pw-in-a-Password"}


class TestRedact:
    def test_every_occurrence_longest_first(self) -> None:
        text = f"a={SECRET} b={SECRET}-long c={SECRET}"
        assert redact(text, [SECRET, SECRET + "-long"]) == \
            f"a={HIDDEN} b={HIDDEN} c={HIDDEN}"

    def test_short_values_are_left_alone(self) -> None:
        # Replacing "abc" everywhere would mangle messages and hide nothing.
        assert redact("abc is abc", ["abc"]) == "abc is abc"


class TestKnownSecrets:
    def test_values_and_resolved_placeholders(self) -> None:
        known = KnownSecrets()
        assert known.redact(SECRET) == SECRET
        known.add_config({"sasl.password": SECRET, "topics": "orders-topic"})
        known.add_resolved({"${file:/s.properties:key}": "resolved-value-1"})
        assert known.redact(f"{SECRET} orders-topic resolved-value-1") == \
            "[hidden] orders-topic ${file:/s.properties:key}"

    def test_bounded_keeps_the_most_recent(self) -> None:
        known = KnownSecrets(limit=2)
        known.add(["first-secret", "second-secret", "third-secret"])
        assert len(known) == 2
        assert known.redact("first-secret third-secret") == "first-secret [hidden]"

    def test_repr_shows_no_value(self) -> None:
        known = KnownSecrets()
        known.add([SECRET])
        assert SECRET not in repr(known)


class TestPieces:
    """Issue #41: what a value may be turned into before it is quoted."""

    def test_whole_trimmed_and_comma_elements(self) -> None:
        assert secrets.pieces("  Alpha-1, Beta-22 ,x,") == {
            "  Alpha-1, Beta-22 ,x,", "Alpha-1, Beta-22 ,x,", "Alpha-1", "Beta-22"}

    def test_parts_of_elements_on_request(self) -> None:
        assert secrets.pieces("f1:int8, name=Secret-Part") == {
            "f1:int8, name=Secret-Part", "f1:int8", "name=Secret-Part"}
        assert secrets.pieces("f1:int8, name=Secret-Part", parts=True) == {
            "f1:int8, name=Secret-Part", "f1:int8", "name=Secret-Part", "int8", "name",
            "Secret-Part"}

    def test_too_short_and_hidden_itself_are_no_pieces(self) -> None:
        assert secrets.pieces("ab,hidden,[hidden]") == {"ab,hidden,[hidden]"}
        assert secrets.pieces("abc", min_length=4) == set()


class TestRedactor:
    def test_every_piece_whatever_its_case_longest_first(self) -> None:
        hide = secrets.Redactor(["Alpha-Element-1, Beta-Element-2"])
        text = ("transforms.Alpha-Element-1.type, alias 'BETA-ELEMENT-2', "
                "whole Alpha-Element-1, Beta-Element-2")
        assert hide(text) == (f"transforms.{HIDDEN}.type, alias '{HIDDEN}', whole {HIDDEN}")

    def test_parts_only_of_the_values_asked(self) -> None:
        hide = secrets.Redactor(["orders-topic"], with_parts=["field:Secret-Type"])
        assert hide("Invalid type Secret-Type for field; orders-topic") == \
            f"Invalid type {HIDDEN} for {HIDDEN}; {HIDDEN}"
        assert secrets.Redactor(["field:Secret-Type"])("Invalid type Secret-Type") == \
            "Invalid type Secret-Type"

    def test_no_values_no_change(self) -> None:
        hide = secrets.Redactor(["", "abc"])
        assert not hide
        assert hide("abc stays") == "abc stays"
        assert "Alpha" not in repr(secrets.Redactor(["Alpha-Element-1"]))


class TestKnownSecretsPieces:
    def test_elements_of_values_and_of_resolved_values(self) -> None:
        known = KnownSecrets()
        known.add(["Secret-One-x1, Secret-Two-x2"])
        known.add_resolved({"${file:/s.properties:topics}": "Topic-Alpha-1,Topic-Beta-22"})
        assert known.redact("subscribed to Topic-Beta-22 with secret-two-X2; "
                            "topics Topic-Alpha-1,Topic-Beta-22") == (
            f"subscribed to {HIDDEN} with {HIDDEN}; topics ${{file:/s.properties:topics}}")

    def test_one_long_list_cannot_push_every_other_secret_out(self) -> None:
        known = KnownSecrets(limit=200)
        known.add([SECRET])
        many = ",".join(f"element-{i:04d}" for i in range(1000))
        known.add([many])
        assert len(known) <= 2 + secrets.MAX_REMEMBERED_ELEMENTS
        assert known.redact(SECRET) == HIDDEN


class TestLogRecords:
    def record(self, msg: str, *args: object, exc: bool = False) -> logging.LogRecord:
        exc_info = sys.exc_info() if exc else None
        return logging.LogRecord("t", logging.INFO, __file__, 1, msg, args or None,
                                 exc_info)

    def test_message_args_and_exception(self) -> None:
        known = KnownSecrets()
        known.add([SECRET])
        clean = self.record("nothing to %s", "hide")
        redact_record(clean, known)
        assert clean.args == ("hide",)  # untouched when clean

        dirty = self.record("config %s", {"sasl.password": SECRET})
        redact_record(dirty, known)
        assert dirty.getMessage() == "config {'sasl.password': '[hidden]'}"
        try:
            raise RuntimeError(f"login {SECRET} refused")
        except RuntimeError:
            failed = self.record("task failed", exc=True)
        redact_record(failed, known)
        formatted = logging.Formatter().format(failed)
        assert "login [hidden] refused" in formatted
        assert SECRET not in formatted

    def test_installed_factory_scrubs_known_secrets(
            self, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
        previous = logging.getLogRecordFactory()
        monkeypatch.setattr(secrets, "_installed", False)
        try:
            secrets.install_log_redaction()
            installed = logging.getLogRecordFactory()
            secrets.install_log_redaction()  # idempotent
            assert logging.getLogRecordFactory() is installed
            secrets.KNOWN_SECRETS.add(["unit-test-secret-8c1f"])
            with caplog.at_level(logging.INFO, logger="worker.test.secrets"):
                logging.getLogger("worker.test.secrets").info(
                    "value %s", "unit-test-secret-8c1f")
        finally:
            logging.setLogRecordFactory(previous)
        assert caplog.messages == ["value [hidden]"]


class TestConfigException:
    def test_password_and_secret_keys_are_hidden(self) -> None:
        definition = ConfigDef().define(
            "login", Type.PASSWORD, None, Importance.HIGH, "Login.",
            validator=lambda name, value: (_ for _ in ()).throw(
                ConfigException(name, value, "too weak")))
        with pytest.raises(ConfigException) as info:
            definition.parse({"login": SECRET})
        assert str(info.value) == "Invalid value [hidden] for configuration login: too weak"

        for key in ("producer.override.ssl.key.password", "db.password"):
            message = str(ConfigException(key, SECRET, "bad"))
            assert message == f"Invalid value [hidden] for configuration {key}: bad"
        assert str(ConfigException("linger.ms", "x", "bad")) == \
            "Invalid value x for configuration linger.ms: bad"


def test_an_element_does_not_replace_what_a_value_is_known_as() -> None:
    known = KnownSecrets()
    known.add_resolved({"${file:/s:dlq}": "Topic-Alpha-1",
                        "${file:/s:topics}": "Topic-Alpha-1,Topic-Beta-22"})
    snapshot = known._snapshot
    # Resolving the same again changes nothing (no new pattern to build).
    known.add_resolved({"${file:/s:dlq}": "Topic-Alpha-1",
                        "${file:/s:topics}": "Topic-Alpha-1,Topic-Beta-22"})
    assert known._snapshot is snapshot
    assert known.redact("dlq Topic-Alpha-1, other Topic-Beta-22") == \
        f"dlq ${{file:/s:dlq}}, other {HIDDEN}"


def test_known_secrets_stay_bounded_in_size_and_keep_the_workers_own() -> None:
    known = KnownSecrets(limit=100, max_chars=10_000)
    known.pin(["Worker-Own-Keystore-Pw"])
    # A caller validating many large, distinct passwords...
    known.add([f"{i:04d}" + "p" * 3000 for i in range(50)])
    # ... is remembered only within the size bound (the newest first) ...
    assert len(known) <= 4
    assert "[hidden]" in known.redact("0049" + "p" * 3000)
    assert known.redact("0000" + "p" * 3000) == "0000" + "p" * 3000  # the oldest: gone
    # ... and never pushes out the worker's own.
    assert known.redact("pw=Worker-Own-Keystore-Pw") == "pw=[hidden]"
    known.clear()
    assert known.empty and known.redact("Worker-Own-Keystore-Pw") == "Worker-Own-Keystore-Pw"

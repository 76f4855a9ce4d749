"""DynamicConfigManager: whitelist, merge, validation, apply with rollback, registration.

The parts are small ``Reconfigurable`` fakes that record what they were given; the
placeholders are resolved by a real WorkerConfig with a real FileConfigProvider, so that
the tests can check that a resolved secret reaches the parts and nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from worker.config.dynamic import (
    DynamicConfigManager,
    LastValidation,
    ValidationStatus,
    is_reference,
    merge,
    shown,
)
from worker.config.reconfigurable import Reconfigurable
from worker.config.worker_config import WorkerConfig
from worker.errors import BadRequestError, ConfigError, ConfigValidationError

KEYSTORE = "listeners.https.ssl.keystore.location"
PASSWORD = "listeners.https.ssl.keystore.password"
CLIENT_AUTH = "listeners.https.ssl.client.auth"
ADMIN_KEYSTORE = "admin.listeners.https.ssl.keystore.location"
STATIC = {"listeners": "https://127.0.0.1:8443", KEYSTORE: "/etc/tls/static.p12",
          PASSWORD: "static-pw"}
SECRET = "s3cr3t-from-the-file"
NOW_S = 1_700_000_000.5

Check = Callable[[Mapping[str, str]], None]


class Part(Reconfigurable):
    """Declares ``keys``; ``check`` validates; ``fail`` makes ``reconfigure`` raise."""

    def __init__(self, *keys: str, check: Check | None = None, fail: bool = False) -> None:
        self.keys = frozenset(keys)
        self.check = check
        self.fail = fail
        self.validated: list[dict[str, str]] = []
        self.applied: list[dict[str, str]] = []

    def reconfigurable_configs(self) -> frozenset[str]:
        return self.keys

    def validate_reconfiguration(self, configs: Mapping[str, str]) -> None:
        self.validated.append(dict(configs))
        if self.check is not None:
            self.check(configs)

    def reconfigure(self, configs: Mapping[str, str]) -> None:
        if self.fail:
            raise RuntimeError("the listener refused")
        self.applied.append(dict(configs))


def reject(key: str, value: str, message: str) -> Check:
    """A check that refuses ``value`` for ``key`` with ConfigError(key, message)."""
    def check(configs: Mapping[str, str]) -> None:
        if configs.get(key) == value:
            raise ConfigError(key, message)
    return check


def manager(**static: str) -> DynamicConfigManager:
    return DynamicConfigManager(static or STATIC, clock=lambda: NOW_S)


# --- whitelist, merge, request checks ------------------------------------------------------

def test_whitelist_is_the_union_of_the_registered_parts() -> None:
    dynamic = manager()
    assert dynamic.whitelist() == frozenset()
    dynamic.register(Part(KEYSTORE, PASSWORD))
    dynamic.register(Part(PASSWORD, ADMIN_KEYSTORE))
    assert dynamic.whitelist() == {KEYSTORE, PASSWORD, ADMIN_KEYSTORE}


def test_merge_replaces_adds_and_null_removes() -> None:
    assert merge({KEYSTORE: "a", PASSWORD: "p"}, {KEYSTORE: "b", PASSWORD: None,
                                                  CLIENT_AUTH: "required", "absent": None}
                 ) == {KEYSTORE: "b", CLIENT_AUTH: "required"}


def test_request_with_keys_outside_the_whitelist_is_refused_naming_them() -> None:
    dynamic = manager()
    dynamic.register(Part(KEYSTORE))
    dynamic.check_request({KEYSTORE: "/x.p12"}, {})
    with pytest.raises(BadRequestError) as caught:
        dynamic.check_request({"offset.flush.interval.ms": "1", KEYSTORE: "/x.p12",
                               "group.id": None}, {})
    message = str(caught.value)
    assert "group.id, offset.flush.interval.ms" in message and KEYSTORE in message
    # Removing a stored override is always allowed (written by another version, say).
    dynamic.check_request({"group.id": None}, {"group.id": "old"})


# --- validation -----------------------------------------------------------------------

def test_validation_collects_every_part_s_errors_per_key() -> None:
    dynamic = manager()
    first = Part(KEYSTORE, PASSWORD, check=reject(KEYSTORE, "/missing.p12",
                                                  "the keystore file does not exist"))
    second = Part(CLIENT_AUTH, check=reject(KEYSTORE, "/missing.p12", "cannot load it"))
    dynamic.register(first)
    dynamic.register(second)
    errors = dynamic.validate({KEYSTORE: "/missing.p12", "stale.key": "x"})
    # A key no part declares is reported without asking the parts.
    assert errors == {"stale.key": ["Invalid value for configuration stale.key: not a "
                                    "dynamically reconfigurable worker configuration"]}
    assert first.validated == []
    errors = dynamic.validate({KEYSTORE: "/missing.p12"})
    assert errors == {KEYSTORE: [
        f"Invalid value for configuration {KEYSTORE}: the keystore file does not exist",
        f"Invalid value for configuration {KEYSTORE}: cannot load it"]}
    # Each part saw the whole effective configuration: static merged with the overrides.
    assert first.validated[-1] == {**STATIC, KEYSTORE: "/missing.p12"}
    assert dynamic.validate({KEYSTORE: "/ok.p12"}) == {}
    assert first.applied == [] and dynamic.state().version == -1  # validation changes nothing


def test_validate_or_raise_lists_the_problems() -> None:
    dynamic = manager()
    dynamic.register(Part(KEYSTORE, check=reject(KEYSTORE, "/missing.p12", "no such file")))
    dynamic.validate_or_raise({KEYSTORE: "/ok.p12"})
    with pytest.raises(ConfigValidationError) as caught:
        dynamic.validate_or_raise({KEYSTORE: "/missing.p12"})
    assert str(caught.value) == (
        "Worker configuration is invalid and contains the following 1 error(s):\n"
        f"Invalid value for configuration {KEYSTORE}: no such file")
    assert caught.value.status_code == 400
    assert caught.value.errors == {KEYSTORE: [
        f"Invalid value for configuration {KEYSTORE}: no such file"]}


@pytest.fixture
def secrets_file(tmp_path: Path) -> Path:
    path = tmp_path / "tls.properties"
    path.write_text(f"ks.password={SECRET}\n", encoding="utf-8")
    return path


def with_file_provider(secrets_file: Path) -> WorkerConfig:
    return WorkerConfig({"listeners": "https://127.0.0.1:8443",
                         "config.providers": "file",
                         "config.providers.file.class": "FileConfigProvider",
                         PASSWORD: f"${{file:{secrets_file}:ks.password}}"})


def test_placeholders_are_resolved_for_the_parts_and_stay_raw_elsewhere(
        secrets_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    dynamic = DynamicConfigManager.for_worker(with_file_provider(secrets_file))
    part = Part(KEYSTORE, PASSWORD)
    dynamic.register(part)
    raw = {KEYSTORE: "/etc/tls/new.p12", PASSWORD: f"${{file:{secrets_file}:ks.password}}"}
    assert dynamic.apply(1, raw)
    assert part.applied[-1][PASSWORD] == SECRET  # the static placeholder, resolved
    assert part.applied[-1][KEYSTORE] == "/etc/tls/new.p12"
    assert dynamic.state().overrides == raw
    assert SECRET not in caplog.text and SECRET not in repr(dynamic.state())


def test_a_placeholder_that_does_not_resolve_is_named_and_nothing_is_applied(
        secrets_file: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    dynamic = DynamicConfigManager.for_worker(with_file_provider(secrets_file))
    part = Part(KEYSTORE, PASSWORD)
    dynamic.register(part)
    missing = f"${{file:{tmp_path / 'gone.properties'}:ks.password}}"
    unknown_key = f"${{file:{secrets_file}:nope}}"
    errors = dynamic.validate({PASSWORD: missing, KEYSTORE: unknown_key})
    assert set(errors) == {KEYSTORE, PASSWORD}
    assert missing in errors[PASSWORD][0] and unknown_key in errors[KEYSTORE][0]
    assert part.validated == []  # the parts would only report the same keys, less clearly
    assert not dynamic.apply(1, {PASSWORD: missing})
    assert part.applied == []
    assert dynamic.state().last_validation.status is ValidationStatus.FAILED
    assert SECRET not in caplog.text


# --- applying -------------------------------------------------------------------------

def test_apply_validates_every_part_before_reconfiguring_any(
        caplog: pytest.LogCaptureFixture) -> None:
    dynamic = manager()
    first, second = Part(KEYSTORE), Part(PASSWORD, check=reject(PASSWORD, "wrong-pw",
                                                              "wrong keystore password"))
    dynamic.register(first)
    dynamic.register(second)
    assert not dynamic.apply(5, {KEYSTORE: "/new.p12", PASSWORD: "wrong-pw"})
    assert first.applied == [] and second.applied == []
    state = dynamic.state()
    assert state.version == -1 and state.overrides == {}
    assert state.last_validation == LastValidation(
        ValidationStatus.FAILED,
        f"Invalid value for configuration {PASSWORD}: wrong keystore password",
        int(NOW_S * 1000))
    assert "version 5 was not applied" in caplog.text and "wrong-pw" not in caplog.text


def test_apply_reconfigures_every_part_and_records_it() -> None:
    dynamic = manager()
    first, second = Part(KEYSTORE), Part(CLIENT_AUTH)
    dynamic.register(first)
    dynamic.register(second)
    assert dynamic.state().last_validation == LastValidation()
    assert dynamic.apply(7, {KEYSTORE: "/new.p12", CLIENT_AUTH: "required"})
    effective = {**STATIC, KEYSTORE: "/new.p12", CLIENT_AUTH: "required"}
    assert first.applied == [effective] and second.applied == [effective]
    state = dynamic.state()
    assert (state.version, state.overrides) == (7, {KEYSTORE: "/new.p12",
                                                    CLIENT_AUTH: "required"})
    assert state.last_validation == LastValidation(ValidationStatus.OK, None,
                                                   int(NOW_S * 1000))
    # No overrides at all: the static configuration is back.
    assert dynamic.apply(8, {})
    assert first.applied[-1] == STATIC


def test_a_part_failing_to_reconfigure_puts_the_others_back(
        caplog: pytest.LogCaptureFixture) -> None:
    dynamic = manager()
    first, second = Part(KEYSTORE), Part(CLIENT_AUTH)
    dynamic.register(first)
    dynamic.register(second)
    assert dynamic.apply(1, {KEYSTORE: "/one.p12"})
    second.fail = True
    assert not dynamic.apply(2, {KEYSTORE: "/two.p12"})
    # The first part took version 2, then got version 1's configuration back.
    assert [a[KEYSTORE] for a in first.applied] == ["/one.p12", "/two.p12", "/one.p12"]
    state = dynamic.state()
    assert (state.version, state.overrides) == (1, {KEYSTORE: "/one.p12"})
    assert state.last_validation.status is ValidationStatus.FAILED
    assert state.last_validation.message == "Part failed to reconfigure: RuntimeError"
    assert "Part could not apply dynamic worker configuration version 2" in caplog.text


def test_versions_not_newer_than_the_last_offered_are_ignored() -> None:
    dynamic = manager()
    part = Part(KEYSTORE, check=reject(KEYSTORE, "/bad.p12", "unreadable"))
    dynamic.register(part)
    assert dynamic.apply(3, {KEYSTORE: "/a.p12"})
    assert dynamic.apply(3, {KEYSTORE: "/a.p12"})  # the leader reads its own write back
    assert not dynamic.apply(2, {KEYSTORE: "/old.p12"})
    assert len(part.applied) == 1
    # The same overrides under a new version apply again (a keystore replaced in place).
    assert dynamic.apply(4, {KEYSTORE: "/a.p12"})
    assert len(part.applied) == 2
    assert not dynamic.apply(5, {KEYSTORE: "/bad.p12"})
    assert not dynamic.apply(5, {KEYSTORE: "/bad.p12"})  # tried once, not again
    assert len(part.validated) == 3


def test_a_part_failing_validation_unexpectedly_is_reported(
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(_configs: Mapping[str, str]) -> None:
        raise KeyError("oops")
    dynamic = manager()
    dynamic.register(Part(KEYSTORE, check=broken))
    assert not dynamic.apply(1, {KEYSTORE: "/a.p12"})
    assert dynamic.state().last_validation.message == "unexpected KeyError while validating"
    with pytest.raises(KeyError):  # a request answers 500
        dynamic.validate({KEYSTORE: "/a.p12"})


# --- startup and registration ---------------------------------------------------------

def test_load_without_overrides_only_records_the_version() -> None:
    dynamic = manager()
    part = Part(KEYSTORE)
    dynamic.register(part)
    dynamic.load(4, {})
    assert part.applied == [] and part.validated == []
    assert dynamic.state().version == 4
    assert dynamic.state().last_validation.status is ValidationStatus.NONE
    dynamic.load(6, {KEYSTORE: "/stored.p12"})
    assert part.applied == [{**STATIC, KEYSTORE: "/stored.p12"}]
    assert dynamic.state().version == 6


def test_registering_applies_the_overrides_in_force_at_once() -> None:
    dynamic = manager()
    dynamic.register(Part(KEYSTORE, CLIENT_AUTH))
    assert dynamic.apply(2, {KEYSTORE: "/a.p12", CLIENT_AUTH: "required"})
    late = Part(CLIENT_AUTH)
    dynamic.register(late)
    assert late.applied == [{**STATIC, KEYSTORE: "/a.p12", CLIENT_AUTH: "required"}]
    assert dynamic.state().last_validation.status is ValidationStatus.OK


def test_a_part_that_cannot_take_the_overrides_keeps_its_static_config() -> None:
    dynamic = manager()
    dynamic.register(Part(KEYSTORE))
    assert dynamic.apply(2, {KEYSTORE: "/a.p12"})
    picky = Part(CLIENT_AUTH, check=reject(KEYSTORE, "/a.p12", "not readable here"))
    dynamic.register(picky)
    assert picky.applied == []
    state = dynamic.state()
    assert state.version == 2  # still what the other parts applied
    assert state.last_validation.status is ValidationStatus.FAILED
    assert state.last_validation.message == (
        f"Invalid value for configuration {KEYSTORE}: not readable here")
    assert CLIENT_AUTH in dynamic.whitelist()  # registered all the same: later changes
    assert dynamic.apply(3, {CLIENT_AUTH: "required"})
    assert picky.applied == [{**STATIC, CLIENT_AUTH: "required"}]


# --- issue #41: a part's message never shows a resolved or secret value -------------------

class Quoting(Part):
    """A careless part: its messages quote the values it is given, whole, trimmed, split,
    upper-cased; ``fail`` makes ``reconfigure`` raise such a message too."""

    def __init__(self, key: str, *, fail: bool = False) -> None:
        super().__init__(key, PASSWORD, CLIENT_AUTH)
        self.key = key
        self.fail_with_config_error = fail

    def validate_reconfiguration(self, configs: Mapping[str, str]) -> None:
        if not self.fail_with_config_error:
            self._complain(configs)

    def reconfigure(self, configs: Mapping[str, str]) -> None:
        if self.fail_with_config_error:
            self._complain(configs)
        super().reconfigure(configs)

    def _complain(self, configs: Mapping[str, str]) -> None:
        value = configs[self.key]
        pieces = [piece.strip() for piece in value.split(",")]
        raise ConfigError(self.key, f"{value!r} / {value.strip().upper()} / "
                                    f"{' and '.join(pieces)} / password {configs[PASSWORD]}")


LIST_SECRET = "Alpha-Element-7781 , Beta-Element-2290"


@pytest.fixture
def list_file(tmp_path: Path) -> Path:
    path = tmp_path / "lists.properties"
    path.write_text(f"auth={LIST_SECRET}\n", encoding="utf-8")
    return path


def quoting_manager() -> DynamicConfigManager:
    return DynamicConfigManager.for_worker(WorkerConfig({
        "listeners": "https://127.0.0.1:8443", "config.providers": "file",
        "config.providers.file.class": "FileConfigProvider",
        PASSWORD: "static-Literal-Pw-55"}))


def shows_nothing_secret(text: str) -> None:
    lowered = text.lower()
    for needle in (LIST_SECRET, "Alpha-Element-7781", "Beta-Element-2290",
                   "static-Literal-Pw-55"):
        assert needle.lower() not in lowered, text


def test_a_part_s_message_is_scrubbed_of_resolved_and_secret_values(
        list_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    dynamic = quoting_manager()
    dynamic.register(Quoting(CLIENT_AUTH))
    placeholder = f"${{file:{list_file}:auth}}"
    errors = dynamic.validate({CLIENT_AUTH: placeholder})
    [message] = errors[CLIENT_AUTH]
    shows_nothing_secret(message)
    assert placeholder in message  # the whole value is shown as its placeholder
    assert "[hidden] and [hidden]" in message
    assert "password [hidden]" in message  # a secret key's value, literal
    # Applying fails the same way; the recorded message and the log are scrubbed too.
    assert not dynamic.apply(1, {CLIENT_AUTH: placeholder})
    recorded = dynamic.state().last_validation.message
    assert recorded is not None and "[hidden] and [hidden]" in recorded
    shows_nothing_secret(recorded)
    shows_nothing_secret(caplog.text)


def test_a_part_failing_to_reconfigure_reports_a_scrubbed_message(list_file: Path) -> None:
    dynamic = quoting_manager()
    dynamic.register(Quoting(CLIENT_AUTH, fail=True))
    assert not dynamic.apply(1, {CLIENT_AUTH: f"${{file:{list_file}:auth}}"})
    recorded = dynamic.state().last_validation.message
    assert recorded is not None and recorded.startswith("Quoting failed to reconfigure: ")
    shows_nothing_secret(recorded)


@pytest.mark.parametrize(("value", "reference"), [
    ("${file:/etc/tls/secrets.properties:ks}", True),
    (" ${file:/a:x}${env:B} ", True),
    ("prefix-${env:KS_PW}", False),
    ("plain-password", False),
    ("", False),
])
def test_a_reference_is_nothing_but_placeholders(value: str, reference: bool) -> None:
    assert is_reference(value) is reference


def test_shown_hides_a_secret_s_value_unless_a_reference_or_revealed() -> None:
    overrides = {KEYSTORE: "/tls/ks.p12", PASSWORD: "clear-pw",
                 "listeners.https.ssl.key.password": "${file:/s.properties:key}",
                 "admin.listeners.https.ssl.truststore.password": "x-${env:T}",
                 CLIENT_AUTH: "required"}
    assert shown(overrides, reveal_secrets=False) == {
        **overrides, PASSWORD: "[hidden]",
        "admin.listeners.https.ssl.truststore.password": "[hidden]"}
    assert shown(overrides, reveal_secrets=True) == overrides

"""``worker.clients.properties``: Kafka's Java client properties as librdkafka's."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.clients.properties import ClientPropertyError, jaas_options, translate
from worker.testing.tls import TestCA

SECRET = "s3cr3t-Value"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def error(props: dict[str, str], role: str = "producer") -> ClientPropertyError:
    with pytest.raises(ClientPropertyError) as info:
        translate(props, role)
    return info.value


def test_same_named_keys_pass_and_renamed_keys_are_translated() -> None:
    producer = translate({"acks": "all", "linger.ms": "20", "max.request.size": "2097152",
                          "buffer.memory": "33554432", "send.buffer.bytes": "-1",
                          "receive.buffer.bytes": "65536", "compression.type": "zstd"},
                         "producer")
    assert producer.config == {
        "acks": "all", "linger.ms": "20", "message.max.bytes": "2097152",
        "queue.buffering.max.kbytes": "32768", "socket.send.buffer.bytes": "0",
        "socket.receive.buffer.bytes": "65536", "compression.type": "zstd"}
    assert producer.origin["message.max.bytes"] == "max.request.size"
    consumer = translate({"fetch.max.wait.ms": "250", "auto.offset.reset": "none",
                          "max.partition.fetch.bytes": "1048576"}, "consumer")
    assert consumer.config == {"fetch.wait.max.ms": "250", "auto.offset.reset": "error",
                               "max.partition.fetch.bytes": "1048576"}


def test_max_poll_records_is_kept_for_the_runtime() -> None:
    props = translate({"max.poll.records": "100", "group.instance.id": "a"}, "consumer")
    assert props.max_poll_records == 100 and props.config == {"group.instance.id": "a"}
    assert translate({"max.poll.records": "100"}, "producer").dropped == ("max.poll.records",)
    assert error({"max.poll.records": "0"}, "consumer").key == "max.poll.records"


def test_java_only_keys_are_dropped_and_named() -> None:
    props = translate({"key.serializer": "org.apache.kafka.common.serialization.ByteArray"
                                         "Serializer",
                       "interceptor.classes": "io.confluent.Monitoring", "max.block.ms": "1",
                       "sasl.login.refresh.window.factor": "0.8", "acks": "1"}, "producer")
    assert props.config == {"acks": "1"}
    assert props.dropped == ("interceptor.classes", "key.serializer", "max.block.ms",
                             "sasl.login.refresh.window.factor")


@pytest.mark.parametrize(("value", "expected"), [
    ("org.apache.kafka.clients.consumer.RangeAssignor", "range"),
    ("org.apache.kafka.clients.consumer.RangeAssignor, "
     "org.apache.kafka.clients.consumer.RoundRobinAssignor", "range,roundrobin"),
    ("org.apache.kafka.clients.consumer.CooperativeStickyAssignor", "cooperative-sticky"),
    ("roundrobin", "roundrobin"),
])
def test_java_assignors_become_librdkafka_names(value: str, expected: str) -> None:
    assert translate({"partition.assignment.strategy": value},
                     "consumer").config["partition.assignment.strategy"] == expected


def test_assignors_librdkafka_has_not_are_errors_with_a_hint() -> None:
    sticky = error({"partition.assignment.strategy":
                    "org.apache.kafka.clients.consumer.StickyAssignor"}, "consumer")
    assert sticky.key == "partition.assignment.strategy"
    assert "CooperativeStickyAssignor" in str(sticky)
    mixed = error({"partition.assignment.strategy": "range,cooperative-sticky"}, "consumer")
    assert "cannot be combined" in str(mixed)


def test_partitioner_classes() -> None:
    default = "org.apache.kafka.clients.producer.internals.DefaultPartitioner"
    assert translate({"partitioner.class": default}, "producer").config == {
        "partitioner": "murmur2_random"}
    custom = error({"partitioner.class": "com.acme.RegionPartitioner"})
    assert custom.key == "partitioner.class" and "Java partitioner" in str(custom)


@pytest.mark.parametrize("module", [PLAIN, SCRAM])
def test_jaas_username_password_modules(module: str) -> None:
    jaas = f'{module} required username="connect" password="{SECRET}";'
    props = translate({"sasl.jaas.config": jaas, "sasl.mechanism": "SCRAM-SHA-512",
                       "security.protocol": "SASL_SSL"}, "admin")
    assert props.config == {"sasl.mechanism": "SCRAM-SHA-512", "security.protocol": "SASL_SSL",
                            "sasl.username": "connect", "sasl.password": SECRET}
    assert props.origin["sasl.password"] == "sasl.jaas.config"


def test_jaas_kerberos_and_oauthbearer() -> None:
    kerberos = ('com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true '
                'storeKey=true keyTab="/etc/connect.keytab" principal="connect@EXAMPLE.COM";')
    assert translate({"sasl.jaas.config": kerberos}, "consumer").config == {
        "sasl.kerberos.keytab": "/etc/connect.keytab",
        "sasl.kerberos.principal": "connect@EXAMPLE.COM"}
    oidc = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            f'clientId="connect" clientSecret="{SECRET}" scope="kafka";')
    assert translate({"sasl.jaas.config": oidc,
                      "sasl.oauthbearer.token.endpoint.url": "https://idp/token"},
                     "producer").config == {
        "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
        "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "connect",
        "sasl.oauthbearer.client.secret": SECRET, "sasl.oauthbearer.scope": "kafka"}
    unsecured = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                 'required unsecuredLoginStringClaim_sub="alice";')
    assert translate({"sasl.jaas.config": unsecured}, "admin").config == {
        "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": "principal=alice"}


def test_jaas_options_unescape_quotes() -> None:
    module, options = jaas_options(f'{PLAIN} required username="a\\"b" password=bare;')
    assert module == PLAIN and options == {"username": 'a"b', "password": "bare"}


@pytest.mark.parametrize("jaas", [
    f'com.acme.LdapLoginModule required password="{SECRET}";',
    f'{PLAIN} required username="u";',
    f'{PLAIN} required username="u" password="{SECRET}" garbage',
    f'{PLAIN} password="{SECRET}";',
])
def test_bad_jaas_is_an_error_that_never_quotes_it(jaas: str) -> None:
    failure = error({"sasl.jaas.config": jaas})
    assert failure.key == "sasl.jaas.config" and SECRET not in str(failure)


def test_pkcs12_truststore_becomes_ca_pem(tmp_path: Path) -> None:
    ca = TestCA()
    store = ca.write_pkcs12_truststore(tmp_path / "trust.p12", "trust-pw")
    props = translate({"ssl.truststore.location": str(store), "ssl.truststore.type": "PKCS12",
                       "ssl.truststore.password": "trust-pw", "security.protocol": "SSL"},
                      "consumer")
    assert props.config["ssl.ca.pem"].startswith("-----BEGIN CERTIFICATE-----")
    assert set(props.config) == {"ssl.ca.pem", "security.protocol"}
    assert props.origin["ssl.ca.pem"] == "ssl.truststore.location"
    wrong = error({"ssl.truststore.location": str(store), "ssl.truststore.password": "nope"})
    assert wrong.key == "ssl.truststore.location" and "nope" not in str(wrong)


def test_pem_stores_and_inline_pem(tmp_path: Path) -> None:
    ca = TestCA()
    trust = ca.write_pem_truststore(tmp_path / "ca.pem")
    client = ca.issue_client()
    keystore = client.write_pem(tmp_path / "client.pem", "key-pw")
    props = translate({"ssl.truststore.location": str(trust), "ssl.truststore.type": "PEM",
                       "ssl.keystore.location": str(keystore), "ssl.keystore.type": "PEM",
                       "ssl.key.password": "key-pw"}, "producer")
    assert props.config == {"ssl.key.password": "key-pw", "ssl.ca.location": str(trust),
                            "ssl.certificate.location": str(keystore),
                            "ssl.key.location": str(keystore)}
    inline = translate({"ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----x",
                        "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----y",
                        "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----z"}, "admin")
    assert inline.config == {"ssl.ca.pem": "-----BEGIN CERTIFICATE-----x",
                             "ssl.certificate.pem": "-----BEGIN CERTIFICATE-----y",
                             "ssl.key.pem": "-----BEGIN PRIVATE KEY-----z"}


def test_pkcs12_keystore_is_read_by_librdkafka_itself(tmp_path: Path) -> None:
    client = TestCA().issue_client()
    store = client.write_pkcs12(tmp_path / "client.p12", "ks-pw")
    props = translate({"ssl.keystore.location": str(store), "ssl.keystore.type": "PKCS12",
                       "ssl.keystore.password": "ks-pw"}, "producer")
    assert props.config == {"ssl.keystore.location": str(store),
                            "ssl.keystore.password": "ks-pw"}


def test_jks_and_unreadable_stores_are_errors_naming_the_key(tmp_path: Path) -> None:
    jks = tmp_path / "trust.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    failure = error({"ssl.truststore.location": str(jks)})
    assert failure.key == "ssl.truststore.location" and "keytool -importkeystore" in str(failure)
    missing = error({"ssl.keystore.location": str(tmp_path / "missing.p12")})
    assert missing.key == "ssl.keystore.location" and "cannot be read" in str(missing)


def test_endpoint_identification_and_unknown_role() -> None:
    assert translate({"ssl.endpoint.identification.algorithm": ""}, "admin").config == {
        "ssl.endpoint.identification.algorithm": "none"}
    with pytest.raises(ValueError, match="role must be one of"):
        translate({}, "streams")

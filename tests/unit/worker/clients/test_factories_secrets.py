"""What librdkafka says when a client is created with a bad config next to secrets.

The worker does not scrub confluent-kafka's errors itself: these tests pin that librdkafka
names properties but never echoes the values of its secret ones (and anything that reaches
a status trace or a log is scrubbed of the secrets the worker knows anyway,
``worker/util/secrets.py``). Real clients, no broker needed: creation fails first.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, Producer

SECRET = "pw-librdkafka-Secret-55"


@pytest.mark.parametrize("bad", [
    {"no.such.property": "x"},
    {"enable.idempotence": "maybe"},
    {"sasl.jaas.config": SECRET},  # Java-only: refused, by name
    {"ssl.truststore.password": SECRET},  # Java-only: unknown to librdkafka
    {"ssl.keystore.key": SECRET},
    {"security.protocol": "SSL", "ssl.key.pem": SECRET},
    {"security.protocol": "SSL", "ssl.key.location": "/nonexistent/key.pem"},
    {"security.protocol": "SSL", "ssl.keystore.location": "/nonexistent/k.p12"},
])
def test_client_errors_do_not_echo_secret_values(bad: dict[str, str]) -> None:
    conf = {"bootstrap.servers": "127.0.0.1:1", "ssl.key.password": SECRET,
            "ssl.keystore.password": SECRET, "sasl.password": SECRET,
            "sasl.oauthbearer.client.secret": SECRET, **bad}
    with pytest.raises(KafkaException) as info:
        Producer(conf)
    assert SECRET not in str(info.value)
    assert SECRET not in repr(info.value.args[0])

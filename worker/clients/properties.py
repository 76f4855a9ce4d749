"""Kafka's Java client properties, translated once into librdkafka's.

A ``worker.properties`` or connector config written for Apache Kafka Connect names its
producer, consumer and admin settings as Kafka's Java clients do. The worker's clients are
librdkafka's (confluent-kafka), which share most names but not all. :func:`translate`
turns one client's Java properties into librdkafka's, for the worker's ``producer.`` /
``consumer.`` / ``admin.`` keys, the connectors' ``*.override.*`` keys and the internal
topics' clients alike:

* same-named keys pass through (librdkafka checks them when a client is built:
  ``worker.clients.checks``);
* renamed keys are translated (:data:`RENAMED`, and the value maps below);
* SASL's ``sasl.jaas.config`` (PLAIN, SCRAM, Kerberos, OAUTHBEARER) becomes librdkafka's
  ``sasl.*`` keys, ``ssl.truststore.*`` / ``ssl.keystore.*`` in PKCS12 and PEM become
  ``ssl.ca.*`` / ``ssl.keystore.*`` / ``ssl.certificate.*`` keys (JKS cannot be read
  outside Java: an error that says how to convert it);
* Java assignor and partitioner class names become librdkafka's names;
* ``max.poll.records`` is kept for the runtime (the sink task's batch size);
* keys with no meaning for librdkafka (:data:`DROPPED`) are dropped and named in
  :attr:`ClientProps.dropped`, for the caller's one warning;
* with ``known`` (librdkafka's verdict on a name, ``worker.clients.librdkafka_keys``), any
  other key librdkafka has no setting for is dropped too and named in
  :attr:`ClientProps.unknown`: a Java client warns about a setting it does not know and
  goes on, where librdkafka would refuse to start.

A value that cannot be honoured raises :class:`ClientPropertyError` naming its key. Values
of secret keys never appear in messages.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROLES = ("producer", "consumer", "admin")
log = logging.getLogger(__name__)
_warned: set[tuple[str, tuple[str, ...]]] = set()

#: Java name → librdkafka name, per role ("*": every role).
RENAMED: dict[str, dict[str, str]] = {
    "*": {"send.buffer.bytes": "socket.send.buffer.bytes",
          "receive.buffer.bytes": "socket.receive.buffer.bytes"},
    "producer": {"max.request.size": "message.max.bytes"},
    "consumer": {"fetch.max.wait.ms": "fetch.wait.max.ms"},
    "admin": {},
}

#: Java keys with no meaning for librdkafka: dropped, and named in one warning.
DROPPED = frozenset({
    "key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
    "max.block.ms", "interceptor.classes", "metric.reporters", "metrics.num.samples",
    "metrics.sample.window.ms", "metrics.recording.level", "auto.include.jmx.reporter",
    "default.api.timeout.ms", "exclude.internal.topics", "metadata.max.idle.ms",
    "partitioner.adaptive.partitioning.enable", "partitioner.availability.timeout.ms",
    "partitioner.ignore.keys", "socket.connection.setup.timeout.max.ms",
    "ssl.protocol", "ssl.enabled.protocols", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.secure.random.implementation", "ssl.provider",
    "ssl.engine.factory.class", "security.providers", "sasl.client.callback.handler.class",
    "sasl.login.callback.handler.class", "sasl.login.class", "delivery.timeout.ms.config",
})
#: Prefixes of Java-only key families (login refresh, broker-side token validation).
DROPPED_PREFIXES = ("sasl.login.", "sasl.oauthbearer.jwks.endpoint.",
                    "sasl.oauthbearer.expected.", "sasl.kerberos.ticket.renew.")
_DROPPED_OAUTH = frozenset({"sasl.oauthbearer.scope.claim.name",
                            "sasl.oauthbearer.sub.claim.name",
                            "sasl.oauthbearer.clock.skew.seconds",
                            "sasl.oauthbearer.header.urlencode",
                            "sasl.kerberos.kinit.cmd.java"})

#: Java assignor classes → librdkafka's ``partition.assignment.strategy`` names.
ASSIGNORS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}
_LIBRDKAFKA_ASSIGNORS = frozenset({"range", "roundrobin", "cooperative-sticky"})

#: Java partitioner classes → librdkafka's ``partitioner``. Kafka's default partitioner
#: hashes keys with murmur2, as ``murmur2_random`` does (keyless records: sticky).
PARTITIONERS = {
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner": "murmur2_random",
    "org.apache.kafka.clients.producer.UniformStickyPartitioner": "random",
}

#: Secret keys: their values are never quoted.
SECRET_KEYS = frozenset({"sasl.jaas.config", "ssl.truststore.password",
                         "ssl.keystore.password", "ssl.key.password", "ssl.keystore.key",
                         "sasl.password", "sasl.oauthbearer.client.secret"})

_JKS_MAGIC = b"\xfe\xed\xfe\xed"
_PEM_MARK = b"-----BEGIN"


class ClientPropertyError(ValueError):
    """A client property that cannot be honoured: ``key``, the Java key at fault, and the
    reason (the message; it never quotes a secret key's value)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class ClientProps:
    """One client's librdkafka settings (``config``); ``dropped``: the Java keys with no
    meaning for librdkafka; ``max_poll_records``: Kafka's consumer batch bound, kept for
    the runtime; ``origin``: librdkafka key → the Java key it came from (to name the key
    at fault when librdkafka refuses a value); ``unknown``: the Java keys librdkafka has no
    setting for (dropped)."""

    config: dict[str, str]
    dropped: tuple[str, ...] = ()
    max_poll_records: int | None = None
    origin: dict[str, str] = field(default_factory=dict)
    unknown: tuple[str, ...] = ()


def translate(props: Mapping[str, str], role: str,
              known: Callable[[str], bool] | None = None) -> ClientProps:
    """``props`` (Java client property names, prefix removed) as librdkafka settings for a
    ``role`` client (producer, consumer or admin). ``known``: whether librdkafka has a
    setting of a name; keys passed through under a name it has not are dropped."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    props = {k: str(v) for k, v in props.items()}
    out: dict[str, str] = {}
    origin: dict[str, str] = {}
    dropped: list[str] = []
    unknown: list[str] = []
    max_poll: int | None = None

    def put(key: str, value: str, java_key: str) -> None:
        out[key] = value
        origin[key] = java_key

    renamed = {**RENAMED["*"], **RENAMED[role]}
    for key, value in props.items():
        if key in _CONSUMED:
            continue
        if key in DROPPED or key in _DROPPED_OAUTH or key.startswith(DROPPED_PREFIXES):
            dropped.append(key)
        elif key == "max.poll.records":
            if role == "consumer":
                max_poll = _positive_int(key, value)
            else:
                dropped.append(key)
        elif key == "buffer.memory":
            if role == "producer":
                put("queue.buffering.max.kbytes",
                    str(max(1, -(-_positive_int(key, value) // 1024))), key)
            else:
                dropped.append(key)
        elif key == "partition.assignment.strategy":
            put(key, _assignors(value), key)
        elif key == "partitioner.class":
            put("partitioner", _partitioner(value), key)
        elif key in ("send.buffer.bytes", "receive.buffer.bytes"):
            put(renamed[key], "0" if value.strip() == "-1" else value, key)
        elif key == "auto.offset.reset":
            put(key, "error" if value.strip().lower() == "none" else value, key)
        elif key == "ssl.endpoint.identification.algorithm":
            put(key, (value.strip() or "none").lower(), key)
        elif known is not None and not known(renamed.get(key, key)):
            unknown.append(key)
        else:
            put(renamed.get(key, key), value, key)
    for key, value in _sasl(props).items():
        put(key, value, "sasl.jaas.config")
    for key, (value, java_key) in {**_truststore(props), **_keystore(props)}.items():
        put(key, value, java_key)
    return ClientProps(out, tuple(sorted(dropped)), max_poll, origin, tuple(sorted(unknown)))


def translate_logged(props: Mapping[str, str], role: str, clients: str,
                     known: Callable[[str], bool] | None = None) -> ClientProps:
    """:func:`translate`, naming the dropped and unknown keys in one warning each per
    ``clients`` (what the settings are for, e.g. "connector producer clients") and set of
    keys."""
    translated = translate(props, role, known)
    if translated.dropped and (clients, translated.dropped) not in _warned:
        _warned.add((clients, translated.dropped))
        log.warning("Ignoring %s for %s: Kafka Java client settings with no meaning for this "
                    "worker's Kafka client", ", ".join(translated.dropped), clients)
    if translated.unknown and (clients, translated.unknown) not in _warned:
        _warned.add((clients, translated.unknown))
        log.warning("Ignoring %s for %s: not known to this worker's Kafka client "
                    "(librdkafka); a Java client would ignore an unknown setting too",
                    ", ".join(translated.unknown), clients)
    return translated


#: Java keys read by the SASL and TLS translations below (not passed on as they are).
_CONSUMED = frozenset({
    "sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.type", "ssl.truststore.certificates", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.keystore.type", "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
})


def _positive_int(key: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        number = 0
    if number < 1:
        # The value is not shown: it may have come from a placeholder.
        raise ClientPropertyError(key, "the value is not a positive integer")
    return number


def _assignors(value: str) -> str:
    names = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name = ASSIGNORS.get(item, item if item in _LIBRDKAFKA_ASSIGNORS else None)
        if name is None:
            hint = (" (librdkafka has no eager sticky assignor: use "
                    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor)"
                    if item.endswith(".StickyAssignor") else "")
            raise ClientPropertyError(
                "partition.assignment.strategy",
                f"{item} is not an assignor this worker's consumer has; it supports "
                f"{', '.join(sorted(ASSIGNORS))}{hint}")
        names.append(name)
    if "cooperative-sticky" in names and len(set(names)) > 1:
        raise ClientPropertyError(
            "partition.assignment.strategy",
            "the cooperative sticky assignor cannot be combined with eager ones")
    return ",".join(names)


def _partitioner(value: str) -> str:
    name = PARTITIONERS.get(value.strip())
    if name is None:
        raise ClientPropertyError(
            "partitioner.class",
            f"{value.strip()} is a Java partitioner, which cannot run in this worker's "
            f"producer; it supports "
            f"{', '.join(sorted(PARTITIONERS))} (or librdkafka's own 'partitioner' key)")
    return name


# --------------------------------------------------------------------------- SASL

_JAAS = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)"
                   r"(?P<options>.*?);?\s*$", re.DOTALL)
_JAAS_OPTION = re.compile(r'\s*(?P<key>[\w.-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"'
                          r"|(?P<bare>[^\s;\"]+))")

_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
_KERBEROS = "com.sun.security.auth.module.Krb5LoginModule"
_OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_OAUTH_OLD = "org.apache.kafka.common.security.oauthbearer.internals.OAuthBearerLoginModule"


def jaas_options(value: str) -> tuple[str, dict[str, str]]:
    """The login module class and options of one ``sasl.jaas.config`` entry."""
    match = _JAAS.match(value)
    if match is None:
        raise ClientPropertyError("sasl.jaas.config", "expected '<LoginModule> required "
                                  "key=\"value\" ...;'")
    options: dict[str, str] = {}
    rest = match["options"]
    position = 0
    for option in _JAAS_OPTION.finditer(rest):
        if rest[position:option.start()].strip():
            break
        quoted = option["quoted"]
        options[option["key"]] = (re.sub(r"\\(.)", r"\1", quoted) if quoted is not None
                                  else option["bare"])
        position = option.end()
    if rest[position:].strip(" \t\r\n;"):
        raise ClientPropertyError("sasl.jaas.config", "options must be key=value or "
                                  "key=\"value\"")
    return match["module"], options


def _sasl(props: Mapping[str, str]) -> dict[str, str]:
    value = props.get("sasl.jaas.config", "").strip()
    if not value:
        return {}
    module, options = jaas_options(value)
    if module in (_PLAIN, _SCRAM):
        missing = [k for k in ("username", "password") if k not in options]
        if missing:
            raise ClientPropertyError("sasl.jaas.config",
                                      f"{module} needs {' and '.join(missing)}")
        return {"sasl.username": options["username"], "sasl.password": options["password"]}
    if module == _KERBEROS:
        out = {}
        if options.get("keyTab"):
            out["sasl.kerberos.keytab"] = options["keyTab"]
        if options.get("principal"):
            out["sasl.kerberos.principal"] = options["principal"]
        return out
    if module in (_OAUTH, _OAUTH_OLD):
        if options.get("clientId"):
            out = {"sasl.oauthbearer.method": "oidc",
                   "sasl.oauthbearer.client.id": options["clientId"]}
            if options.get("clientSecret"):
                out["sasl.oauthbearer.client.secret"] = options["clientSecret"]
            if options.get("scope"):
                out["sasl.oauthbearer.scope"] = options["scope"]
            return out
        claims = {k[len("unsecuredLoginStringClaim_"):]: v for k, v in options.items()
                  if k.startswith("unsecuredLoginStringClaim_")}
        if "sub" in claims:
            config = [f"principal={claims['sub']}"]
            if options.get("unsecuredLoginLifetimeSeconds"):
                config.append(f"lifeSeconds={options['unsecuredLoginLifetimeSeconds']}")
            return {"enable.sasl.oauthbearer.unsecure.jwt": "true",
                    "sasl.oauthbearer.config": " ".join(config)}
        raise ClientPropertyError("sasl.jaas.config", "OAuthBearerLoginModule needs "
                                  "clientId (OIDC) or unsecuredLoginStringClaim_sub")
    raise ClientPropertyError("sasl.jaas.config", f"the login module {module} has no "
                              f"equivalent in this worker's Kafka client (it supports "
                              f"{_PLAIN}, {_SCRAM}, {_KERBEROS} and {_OAUTH})")


# --------------------------------------------------------------------------- TLS stores


def _read_store(key: str, location: str) -> bytes:
    try:
        data = Path(location).read_bytes()
    except OSError as exc:
        raise ClientPropertyError(key, f"{location} cannot be read "
                                       f"({exc.strerror or exc})") from None
    if data.startswith(_JKS_MAGIC):
        raise ClientPropertyError(
            key, f"{location} is a JKS keystore, which cannot be read outside Java; "
                 "convert it to PKCS12 (keytool -importkeystore "
                 f"-srckeystore {location} -destkeystore <file>.p12 -deststoretype PKCS12) "
                 "and set the .type key to PKCS12")
    return data


def _truststore(props: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    inline = props.get("ssl.truststore.certificates", "").strip()
    if inline:
        return {"ssl.ca.pem": (inline, "ssl.truststore.certificates")}
    location = props.get("ssl.truststore.location", "").strip()
    if not location:
        return {}
    key = "ssl.truststore.location"
    data = _read_store(key, location)
    if data.lstrip().startswith(_PEM_MARK):
        return {"ssl.ca.location": (location, key)}
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    password = props.get("ssl.truststore.password")
    try:
        store = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise ClientPropertyError(key, f"{location} is not a PKCS12 or PEM truststore, or "
                                       "ssl.truststore.password does not open it") from None
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.insert(0, store.cert.certificate)
    if not certs:
        raise ClientPropertyError(key, f"the truststore {location} holds no certificate")
    pem = "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certs)
    return {"ssl.ca.pem": (pem, key)}


def _keystore(props: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    chain = props.get("ssl.keystore.certificate.chain", "").strip()
    if chain:
        out = {"ssl.certificate.pem": (chain, "ssl.keystore.certificate.chain")}
        if props.get("ssl.keystore.key", "").strip():
            out["ssl.key.pem"] = (props["ssl.keystore.key"].strip(), "ssl.keystore.key")
        return out
    location = props.get("ssl.keystore.location", "").strip()
    if not location:
        return {}
    key = "ssl.keystore.location"
    data = _read_store(key, location)
    if data.lstrip().startswith(_PEM_MARK):  # key and certificate chain in one PEM file
        return {"ssl.certificate.location": (location, key),
                "ssl.key.location": (location, key)}
    out = {"ssl.keystore.location": (location, key)}  # librdkafka reads PKCS12 itself
    if props.get("ssl.keystore.password"):
        out["ssl.keystore.password"] = (props["ssl.keystore.password"],
                                        "ssl.keystore.password")
    return out

"""POST /connectors/{c}/tasks hands the request's signature (KIP-507) to the herder, over
the exact body bytes, before the task configs; a malformed signature is a 400 and changes
nothing; the herder's refusal answers with Kafka's status and message."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.unit.worker.rest.conftest import FakeHerder
from worker.herder.request_signing import (
    SIGNATURE_ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    InternalRequestSignature,
    sign,
    verify,
)
from worker.rest.app import create_app

KEY = b"k" * 32
BODY = b'[{"task.class":"x"}]'


class SigningLeader(FakeHerder):
    """Checks signatures with KEY, as a distributed leader does, and stores task configs."""

    def __init__(self) -> None:
        super().__init__()
        self.signatures: list[InternalRequestSignature | None] = []

    def verify_internal_request(self, signature: InternalRequestSignature | None) -> None:
        self.signatures.append(signature)
        verify(signature, KEY, ["HmacSHA256"])

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        self.calls.append(("put_task_configs", name, configs))


@pytest.fixture
def herder() -> SigningLeader:
    return SigningLeader()


@pytest.fixture
def client(herder: SigningLeader) -> Iterator[TestClient]:
    with TestClient(create_app(herder)) as test_client:
        yield test_client


def post(client: TestClient, headers: dict[str, str], body: bytes = BODY) -> tuple[int, str]:
    response = client.post("/connectors/c/tasks", content=body,
                           headers={"Content-Type": "application/json", **headers})
    return response.status_code, response.json()["message"] if response.content else ""


def test_signed_request_is_accepted(client: TestClient, herder: SigningLeader) -> None:
    assert post(client, sign(KEY, "HmacSHA256", BODY)) == (204, "")
    assert herder.calls == [("put_task_configs", "c", [{"task.class": "x"}])]
    signature = herder.signatures[0]
    assert signature is not None and signature.algorithm == "HmacSHA256"


@pytest.mark.parametrize(("headers", "status", "message"), [
    ({}, 400, "Internal request missing required signature"),
    (sign(b"old key" * 4, "HmacSHA256", BODY), 403,
     "Internal request contained invalid signature."),
    ({SIGNATURE_ALGORITHM_HEADER: "HmacFoo", SIGNATURE_HEADER: "AAAA"}, 400,
     "Algorithm HmacFoo not available"),
    ({SIGNATURE_ALGORITHM_HEADER: "HmacSHA256", SIGNATURE_HEADER: "%%%"}, 400,
     "Illegal base64 character 25"),
])
def test_refused_requests_change_nothing(client: TestClient, herder: SigningLeader,
                                         headers: dict[str, str], status: int,
                                         message: str) -> None:
    assert post(client, headers) == (status, message)
    assert herder.calls == []


def test_signature_covers_the_bytes_sent(client: TestClient, herder: SigningLeader) -> None:
    # Same JSON, other bytes: the signature no longer matches.
    headers = sign(KEY, "HmacSHA256", BODY)
    assert post(client, headers, b'[{"task.class": "x"}]')[0] == 403
    assert herder.calls == []

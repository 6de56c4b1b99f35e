"""The schema registry's HTTP door over a service on an in-memory `_schemas`: HTTP Basic
against SCRAM credentials (401 with Confluent's body otherwise), authorization (reads
DESCRIBE, writes ALTER, checked before anything else, for the logged-in user), forwarding
of writes by a broker that is not the writer, Confluent's error bodies for bad requests,
and the metrics per endpoint."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from broker.registry.auth import BasicAuth
from broker.registry.metrics import RegistryMetrics, families
from broker.registry.routes import ENVELOPE, FORWARDED, POSITION, Login, RegistryRoutes
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.service import RegistryService
from protocol.clock import ManualClock
from protocol.principal import ANONYMOUS, KafkaPrincipal
from protocol.scram import ScramCredential, make_credential
from tests.unit.coordinator.schema_registry.test_service import MemoryPartition, service

SCHEMA = json.dumps({"type": "record", "name": "U", "fields": [{"name": "a", "type": "int"}]})


class Forwards:
    """Stands for the other broker: answers every forwarded request with 200 and a position."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str, str]] = []

    async def forward(self, broker_id: int, request: web.Request, body: bytes) -> web.Response:
        self.sent.append((broker_id, request.method, request.path))
        out = web.json_response({"id": 99})
        out.headers[POSITION] = "0"
        return out


Client = TestClient[web.Request, web.Application]


@pytest.fixture
async def door() -> AsyncIterator[Callable[..., Any]]:
    clients: list[Client] = []

    async def make(
        leader: bool = True, allow: Callable[[KafkaPrincipal, str, bool], bool] | None = None,
        login: Login | None = None, forwards: Forwards | None = None,
        svc: RegistryService | None = None,
    ) -> tuple[Client, Forwards]:  # fmt: skip
        forwards = forwards or Forwards()
        svc = svc or service(MemoryPartition(leader), ManualClock())
        routes = RegistryRoutes(svc, forwards, allow, login)
        client: Client = TestClient(TestServer(routes.app()))
        await client.start_server()
        clients.append(client)
        return client, forwards

    yield make
    for client in clients:
        await client.close()


async def test_reads_need_describe_and_writes_alter(door: Callable[..., Any]) -> None:
    asked: list[tuple[KafkaPrincipal, str, bool]] = []

    def reads_only(principal: KafkaPrincipal, peer_host: str, write: bool) -> bool:
        asked.append((principal, peer_host, write))
        return not write

    client, _ = await door(allow=reads_only)
    assert (await client.get("/subjects")).status == 200
    refused = await client.post("/subjects/s/versions", json={"schema": SCHEMA})
    assert refused.status == 403 and (await refused.json())["error_code"] == 40301
    assert asked == [(ANONYMOUS, "127.0.0.1", False), (ANONYMOUS, "127.0.0.1", True)]
    nobody, _ = await door(allow=lambda principal, host, write: False)
    assert (await (await nobody.get("/schemas/types")).json())["error_code"] == 40301


async def test_the_writer_writes_and_answers_from_its_state(door: Callable[..., Any]) -> None:
    client, forwards = await door()
    registered = await client.post("/subjects/s/versions", json={"schema": SCHEMA})
    assert (registered.status, await registered.json()) == (200, {"id": 1})
    assert registered.headers[POSITION] == "1"  # what a forwarding broker waits for
    latest = await (await client.get("/subjects/s/versions/latest")).json()
    assert latest == {"subject": "s", "version": 1, "id": 1, "schema": SCHEMA}
    assert await (await client.get("/schemas/types")).json() == ["AVRO", "JSON", "PROTOBUF"]
    assert forwards.sent == []


async def test_another_broker_forwards_writes_once(door: Callable[..., Any]) -> None:
    client, forwards = await door(leader=False)
    forwarded = await client.post("/subjects/s/versions", json={"schema": SCHEMA})
    assert (forwarded.status, await forwarded.json()) == (200, {"id": 99})
    assert forwards.sent == [(1, "POST", "/subjects/s/versions")]
    again = await client.post("/subjects/s/versions", json={"schema": SCHEMA},
                              headers={FORWARDED: "1"})  # fmt: skip
    assert (again.status, (await again.json())["error_code"]) == (500, 50004)


async def test_a_forwarded_write_is_seen_at_once_by_the_broker_that_forwarded_it(
    door: Callable[..., Any],
) -> None:
    """The writer answers a forwarded write with the records it appended; the forwarding
    broker applies them at once, before its replica has even fetched them (its replay would
    wait a replica fetch for the new high watermark), and answers the client's body."""
    writer, _ = await door()
    enveloped = await writer.post("/subjects/s/versions", json={"schema": SCHEMA},
                                  headers={FORWARDED: "1"})  # fmt: skip
    assert enveloped.headers[ENVELOPE] == "1" and enveloped.headers[POSITION] == "1"
    body = await enveloped.json()
    assert body["answer"] == {"id": 1} and len(body["records"]) == 1

    class Writer(Forwards):
        async def forward(self, broker_id: int, request: web.Request, _: bytes) -> web.Response:
            self.sent.append((broker_id, request.method, request.path))
            out = web.json_response(body)
            out.headers[POSITION], out.headers[ENVELOPE] = "1", "1"
            return out

    svc = service(MemoryPartition(leader=False), ManualClock())
    client, forwards = await door(forwards=Writer(), svc=svc)
    forwarded = await client.post("/subjects/s/versions", json={"schema": SCHEMA})
    assert (forwarded.status, await forwarded.json()) == (200, {"id": 1})
    assert forwards.sent == [(1, "POST", "/subjects/s/versions")]
    assert svc.position == 0  # nothing replayed: the writer's records were applied
    latest = await (await client.get("/subjects/s/versions/latest")).json()
    assert (latest["id"], latest["version"]) == (1, 1)


@pytest.mark.parametrize(("method", "path", "body", "status", "code"), [
    ("POST", "/subjects/s/versions", b"{", 400, 400),
    ("POST", "/subjects/s/versions", b"[1]", 400, 400),
    ("POST", "/subjects/s/versions", b'{"schema": 5}', 422, 42201),
    ("POST", "/subjects/s/versions", b'{"schema": "\\"int\\"", "schemaType": "XML"}', 422, 42201),
    ("POST", "/subjects/s/versions", b'{"schema": "\\"int\\"", "id": 4}', 422, 42205),
    ("POST", "/subjects/s/versions", b'{"schema": "\\"int\\"", "id": "4"}', 422, 42201),
    ("PUT", "/config", b'{"compatibility": "FULL", "compatibilityGroup": "g"}', 501, 50101),
    ("PUT", "/mode", b'{"mode": "WRITEONLY"}', 422, 42204),
    ("GET", "/no/such/path", b"", 404, 404),
    ("GET", "/schemas/ids/x", b"", 404, 40403),
])  # fmt: skip
async def test_bad_requests_get_confluents_bodies(
    door: Callable[..., Any], method: str, path: str, body: bytes, status: int, code: int
) -> None:
    client, _ = await door()
    answer = await client.request(method, path, data=body)
    assert (answer.status, (await answer.json())["error_code"]) == (status, code)


class Users:
    """SCRAM credentials as the broker's cache holds them (one mechanism per user here)."""

    def __init__(self, **passwords: str) -> None:
        self.credentials: dict[tuple[str, str], ScramCredential] = {}
        for user, password in passwords.items():
            self.set(user, password)

    def set(self, user: str, password: str) -> None:
        mechanism = "SCRAM-SHA-256" if user.startswith("sha256") else "SCRAM-SHA-512"
        self.credentials[mechanism, user] = make_credential(mechanism, password)

    def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        return self.credentials.get((mechanism, user))


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.mark.parametrize("headers", [
    {}, {"Authorization": "Bearer abc"}, {"Authorization": "Basic !!!"},
    {"Authorization": "Basic " + base64.b64encode(b"no-colon").decode()},
    basic("alice", "wrong"), basic("mallory", "pw"), basic("", "pw"),
])  # fmt: skip
async def test_basic_login_refusals_are_401_with_confluents_body(
    door: Callable[..., Any], headers: dict[str, str]
) -> None:
    asked: list[KafkaPrincipal] = []
    client, _ = await door(allow=lambda p, h, w: asked.append(p) or True,
                           login=BasicAuth(Users(alice="pw").lookup))  # fmt: skip
    for method, path in (("GET", "/subjects"), ("POST", "/subjects/s/versions")):
        answer = await client.request(method, path, json={"schema": SCHEMA}, headers=headers)
        assert (answer.status, await answer.json()) == (
            401, {"error_code": 401, "message": "Unauthorized"})  # fmt: skip
        assert answer.headers["WWW-Authenticate"].startswith("Basic")
    assert asked == []  # never authorized, never written


async def test_basic_login_names_the_principal_the_authorizer_checks(
    door: Callable[..., Any],
) -> None:
    asked: list[tuple[KafkaPrincipal, bool]] = []

    def alice_writes(principal: KafkaPrincipal, host: str, write: bool) -> bool:
        asked.append((principal, write))
        return principal.name == "alice" or not write

    users = Users(alice="a-pw", sha256bob="b:pw")  # a password may hold a colon
    client, _ = await door(allow=alice_writes, login=BasicAuth(users.lookup))
    ok = await client.post("/subjects/s/versions", json={"schema": SCHEMA},
                           headers=basic("alice", "a-pw"))  # fmt: skip
    assert (ok.status, await ok.json()) == (200, {"id": 1})
    read = await client.get("/subjects", headers=basic("sha256bob", "b:pw"))
    assert (read.status, await read.json()) == (200, ["s"])
    refused = await client.delete("/subjects/s", headers=basic("sha256bob", "b:pw"))
    assert (refused.status, (await refused.json())["error_code"]) == (403, 40301)
    assert "User:sha256bob" in (await refused.json())["message"]
    assert asked == [(KafkaPrincipal.user("alice"), True),
                     (KafkaPrincipal.user("sha256bob"), False),
                     (KafkaPrincipal.user("sha256bob"), True)]  # fmt: skip


async def test_a_remembered_login_ends_when_the_credential_changes() -> None:
    users = Users(alice="old")
    auth = BasicAuth(users.lookup, remembered_max=1)
    header = basic("alice", "old")["Authorization"]
    assert await auth.principal(header) == KafkaPrincipal.user("alice")
    assert await auth.principal(header) == KafkaPrincipal.user("alice")  # remembered
    users.set("alice", "new")
    with pytest.raises(RegistryError) as refused:
        await auth.principal(header)
    assert refused.value.status == 401
    assert await auth.principal(basic("alice", "new")["Authorization"]) == KafkaPrincipal.user(
        "alice"
    )
    assert len(auth._remembered) == 1  # bounded: the oldest went


async def test_requests_latency_and_errors_are_counted_per_endpoint() -> None:
    ticks = iter(range(1000))
    counted = RegistryMetrics()
    svc = service(MemoryPartition(True), ManualClock())
    routes = RegistryRoutes(svc, Forwards(), metrics=counted,
                            now=lambda: next(ticks) * 0.002)  # 2 ms a tick  # fmt: skip
    client: Client = TestClient(TestServer(routes.app()))
    await client.start_server()
    try:
        for subject in ("a", "b"):  # two subjects: one endpoint label
            await client.post(f"/subjects/{subject}/versions", json={"schema": SCHEMA})
        await client.get("/subjects/nope/versions")
        await client.get("/no/such/path")
    finally:
        await client.close()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in families(counted.reading(svc.state)) for s in family.samples
    }  # fmt: skip
    post = (("endpoint", "/subjects/{subject}/versions"), ("method", "POST"))
    get = (("endpoint", "/subjects/{subject}/versions"), ("method", "GET"))
    assert samples["odradek_schema_registry_requests_total", post] == 2
    assert samples["odradek_schema_registry_requests_total", get] == 1
    assert samples["odradek_schema_registry_request_duration_seconds_sum", post] == (
        pytest.approx(0.004))  # fmt: skip
    le = (("endpoint", "/subjects/{subject}/versions"), ("le", "0.0025"), ("method", "POST"))
    assert samples["odradek_schema_registry_request_duration_seconds_bucket", le] == 2
    assert (
        samples[
            "odradek_schema_registry_errors_total",
            (*get[:1], ("error_code", "40401"), *get[1:], ("status", "404")),
        ]
        == 1
    )
    unmatched = (("endpoint", "unmatched"), ("error_code", "404"), ("method", "GET"),
                 ("status", "404"))  # fmt: skip
    assert samples["odradek_schema_registry_errors_total", unmatched] == 1
    assert not any(k[0] == "odradek_schema_registry_errors_total" and k[1] == post
                   for k in samples)  # fmt: skip
    assert samples["odradek_schema_registry_schemas", ()] == 1  # the same schema: one id
    assert samples["odradek_schema_registry_subjects", ()] == 2

"""The schema registry's HTTP door over a service on an in-memory `_schemas`: authorization
(reads DESCRIBE, writes ALTER, checked before anything else), forwarding of writes by a broker
that is not the writer, and Confluent's error bodies for bad requests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from broker.registry.routes import FORWARDED, POSITION, RegistryRoutes
from protocol.clock import ManualClock
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
        leader: bool = True, allow: Callable[[str, bool], bool] | None = None
    ) -> tuple[Client, Forwards]:
        forwards = Forwards()
        routes = RegistryRoutes(service(MemoryPartition(leader), ManualClock()), forwards, allow)
        client: Client = TestClient(TestServer(routes.app()))
        await client.start_server()
        clients.append(client)
        return client, forwards

    yield make
    for client in clients:
        await client.close()


async def test_reads_need_describe_and_writes_alter(door: Callable[..., Any]) -> None:
    asked: list[tuple[str, bool]] = []

    def reads_only(peer_host: str, write: bool) -> bool:
        asked.append((peer_host, write))
        return not write

    client, _ = await door(allow=reads_only)
    assert (await client.get("/subjects")).status == 200
    refused = await client.post("/subjects/s/versions", json={"schema": SCHEMA})
    assert refused.status == 403 and (await refused.json())["error_code"] == 40301
    assert asked == [("127.0.0.1", False), ("127.0.0.1", True)]
    nobody, _ = await door(allow=lambda host, write: False)
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


@pytest.mark.parametrize(("method", "path", "body", "status", "code"), [
    ("POST", "/subjects/s/versions", b"{", 400, 400),
    ("POST", "/subjects/s/versions", b"[1]", 400, 400),
    ("POST", "/subjects/s/versions", b'{"schema": 5}', 422, 42201),
    ("POST", "/subjects/s/versions", b'{"schema": "\\"int\\"", "schemaType": "XML"}', 422, 42201),
    ("POST", "/subjects/s/versions", b'{"schema": "\\"int\\"", "id": 4}', 501, 50101),
    ("PUT", "/config", b'{"compatibility": "FULL", "compatibilityGroup": "g"}', 501, 50101),
    ("PUT", "/mode", b'{"mode": "IMPORT"}', 501, 50101),
    ("GET", "/no/such/path", b"", 404, 404),
    ("GET", "/schemas/ids/x", b"", 404, 40403),
])  # fmt: skip
async def test_bad_requests_get_confluents_bodies(
    door: Callable[..., Any], method: str, path: str, body: bytes, status: int, code: int
) -> None:
    client, _ = await door()
    answer = await client.request(method, path, data=body)
    assert (answer.status, (await answer.json())["error_code"]) == (status, code)

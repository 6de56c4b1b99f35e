"""KIP-554 on the broker: Kafka's checks (broker/credentials.py), the native handlers over an
in-memory credential store, Cluster Alter / Describe through the authorizer, and the Kafka-door
adapters' shape (kio entities encode and decode as Kafka's v0)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from broker.credentials import Changes, Credentials, describe_results, plan_alteration
from broker.handlers import alter_user_scram_credentials as alter
from broker.handlers import describe_user_scram_credentials as describe
from broker.handlers.kafka import alter_user_scram_credentials as kafka_alter
from broker.handlers.kafka import describe_user_scram_credentials as kafka_describe
from broker.security.authorizer import Authorizer, parse_super_users
from broker.session import Session
from protocol.api.scram import (
    ALTER_USER_SCRAM_CREDENTIALS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
    AlterUserScramCredentialsRequest,
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from protocol.codec import Request, RequestHeader
from protocol.kafka.codec import (
    KafkaRequest,
    decode_response,
    encode_response,
    make,
    nested,
    request_class,
)
from protocol.principal import KafkaPrincipal
from protocol.scram import SCRAM_SHA_256, SCRAM_SHA_512, ScramClient, ScramServer, salted_password

SHA256, SHA512 = SCRAM_SHA_256.type_code, SCRAM_SHA_512.type_code


def upsert(name: str, mech: int = SHA512, iterations: int = 8192, pw: str = "pw") -> Any:
    m = SCRAM_SHA_512 if mech == SHA512 else SCRAM_SHA_256
    salted = salted_password(m, pw, b"salt", iterations) if mech in (SHA256, SHA512) else b"x"
    return ScramCredentialUpsertion(name, mech, iterations, b"salt", salted)


class MemoryStore:
    def __init__(self) -> None:
        self.users: dict[str, Credentials] = {}
        self.writes: list[tuple[str, Changes]] = []

    def lookup(self, mechanism: str, user: str) -> Any:
        return self.users.get(user, {}).get(mechanism)

    async def read_user(self, user: str) -> Credentials:
        return dict(self.users.get(user, {}))

    async def read_all_users(self) -> dict[str, Credentials]:
        return {u: dict(c) for u, c in self.users.items() if c}

    async def alter(self, user: str, changes: Changes) -> None:
        self.writes.append((user, dict(changes)))
        creds = self.users.setdefault(user, {})
        for mech, cred in changes.items():
            if cred is None:
                creds.pop(mech, None)
            else:
                creds[mech] = cred


def ctx(store: MemoryStore, authorizer: Authorizer | None = None) -> Any:
    return SimpleNamespace(credentials=store, authorizer=authorizer)


def native(spec: Any, body: Any) -> Request:
    return Request(RequestHeader(spec.key, 0, 1, "test"), spec, body)


def run_alter(c: Any, upsertions: list[Any], deletions: list[Any], session: Session) -> Any:
    request = native(
        ALTER_USER_SCRAM_CREDENTIALS, AlterUserScramCredentialsRequest(deletions, upsertions)
    )
    return asyncio.run(alter.handle(c, request, session))


def test_plan_is_kafkas_checks() -> None:
    plan = plan_alteration(
        [
            upsert(""),
            upsert("weak", iterations=4095),
            upsert("huge", iterations=16385),
            upsert("odd", mech=3),
            upsert("twice"),
            upsert("twice"),
            upsert("ok"),
            upsert("ok", mech=SHA256),
        ],
        [ScramCredentialDeletion("ghost", SHA256), ScramCredentialDeletion("odd2", 0)],
        {"ok": {}, "twice": {}, "ghost": {}},
    )
    assert plan.errors == {
        "": (93, "Username must not be empty"),
        "weak": (93, "Too few iterations"),
        "huge": (93, "Too many iterations"),
        "odd": (33, "Unknown SCRAM mechanism"),
        "odd2": (33, "Unknown SCRAM mechanism"),
        "twice": (92, "A user credential cannot be altered twice in the same request"),
        "ghost": (91, "Attempt to delete a user credential that does not exist"),
    }
    assert list(plan.changes) == ["ok"]
    ok = plan.changes["ok"]
    assert set(ok) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    # the broker derived keys that check a real login with the password the client salted
    cred = ok["SCRAM-SHA-512"]
    assert cred is not None and cred.iterations == 8192 and cred.salt == b"salt"
    server, client = ScramServer(SCRAM_SHA_512), ScramClient(SCRAM_SHA_512, "ok", "pw")
    first = server.respond(client.client_first(), lambda _: cred)
    client.receive_server_final(server.respond(client.client_final(first), lambda _: cred))
    assert server.complete


def test_describe_results_are_kafkas() -> None:
    cred = plan_alteration([upsert("a")], [], {}).changes["a"]["SCRAM-SHA-512"]
    assert cred is not None
    found = {"b": {"SCRAM-SHA-512": cred}, "a": {"SCRAM-SHA-512": cred}, "empty": {}}
    everyone = describe_results(None, found)
    assert [(r.user, r.credential_infos) for r in everyone] == [
        ("a", [CredentialInfo(SHA512, 8192)]),
        ("b", [CredentialInfo(SHA512, 8192)]),
    ]
    named = describe_results(["b", "nobody", "a", "a", ""], found)
    assert [(r.user, r.error_code) for r in named] == [
        ("b", 0),
        ("nobody", 91),
        ("a", 92),
        ("", 91),
    ]
    assert named[1].error_message == (
        "Attempt to describe a user credential that does not exist: nobody"
    )


def test_alter_then_describe_through_the_native_handlers() -> None:
    store = MemoryStore()
    results = run_alter(ctx(store), [upsert("alice"), upsert("", iterations=1)], [], Session())
    assert [(r.user, r.error_code) for r in results.results] == [("", 93), ("alice", 0)]
    assert store.writes[0][0] == "alice"
    request = native(DESCRIBE_USER_SCRAM_CREDENTIALS, DescribeUserScramCredentialsRequest(None))
    described = asyncio.run(describe.handle(ctx(store), request, Session()))
    assert described.error_code == 0
    assert [(r.user, r.credential_infos) for r in described.results] == [
        ("alice", [CredentialInfo(SHA512, 8192)])
    ]
    gone = run_alter(ctx(store), [], [ScramCredentialDeletion("alice", SHA512)], Session())
    assert [(r.user, r.error_code) for r in gone.results] == [("alice", 0)]
    assert store.lookup("SCRAM-SHA-512", "alice") is None


def test_alter_needs_cluster_alter_and_describe_cluster_describe() -> None:
    store = MemoryStore()
    authorizer = Authorizer(super_users=parse_super_users("User:admin"))
    bob = Session(principal=KafkaPrincipal.user("bob"), peer_host="127.0.0.1")
    denied = run_alter(ctx(store, authorizer), [upsert("alice")], [], bob)
    assert [(r.user, r.error_code) for r in denied.results] == [("alice", 31)]
    assert store.writes == []
    request = native(DESCRIBE_USER_SCRAM_CREDENTIALS, DescribeUserScramCredentialsRequest(None))
    refused = asyncio.run(describe.handle(ctx(store, authorizer), request, bob))
    assert refused.error_code == 31 and refused.results == []
    admin = Session(principal=KafkaPrincipal.user("admin"), peer_host="127.0.0.1")
    allowed = run_alter(ctx(store, authorizer), [upsert("alice")], [], admin)
    assert [(r.user, r.error_code) for r in allowed.results] == [("alice", 0)]


def kafka_request(api_key: int, body: Any) -> KafkaRequest:
    header = SimpleNamespace(api_key=api_key, api_version=0, correlation_id=7, client_id="t")
    return KafkaRequest(header, body, True)  # type: ignore[arg-type]


def test_kafka_door_adapters_answer_in_kafkas_shape() -> None:
    store = MemoryStore()
    req_cls = request_class(51, 0)
    upsertion = nested(req_cls, "ScramCredentialUpsertion")
    salted = salted_password(SCRAM_SHA_256, "pw", b"salt", 4096)
    body = make(
        req_cls,
        deletions=(),
        upsertions=(
            make(
                upsertion,
                name="carol",
                mechanism=SHA256,
                iterations=4096,
                salt=b"salt",
                salted_password=salted,
            ),
        ),
    )
    request = kafka_request(51, body)
    answer = asyncio.run(kafka_alter.handle(ctx(store), request, Session()))
    assert [(r.user, int(r.error_code)) for r in answer.results] == [("carol", 0)]
    assert decode_response(51, 0, encode_response(request, answer)[4:]) == (7, answer)
    desc_cls = request_class(50, 0)
    user_name = nested(desc_cls, "UserName")
    body = make(desc_cls, users=(make(user_name, name="carol"), make(user_name, name="dan")))
    request = kafka_request(50, body)
    answer = asyncio.run(kafka_describe.handle(ctx(store), request, Session()))
    assert decode_response(50, 0, encode_response(request, answer)[4:]) == (7, answer)
    assert [(r.user, int(r.error_code)) for r in answer.results] == [("carol", 0), ("dan", 91)]
    assert [(i.mechanism, i.iterations) for i in answer.results[0].credential_infos] == [
        (SHA256, 4096)
    ]

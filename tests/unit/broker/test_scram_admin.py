"""KIP-554 on the broker: Kafka's checks (broker/credentials.py) as pure functions (the
in-memory credential store the operations' tests use is the harness's; the operations themselves:
tests/unit/broker/operations/test_scram_operations.py; their codecs test_scram_codecs.py)."""

from __future__ import annotations

from typing import Any

from broker.credentials import describe_results, plan_alteration
from protocol.api.scram import (
    CredentialInfo,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from protocol.scram import SCRAM_SHA_256, SCRAM_SHA_512, ScramClient, ScramServer, salted_password

SHA256, SHA512 = SCRAM_SHA_256.type_code, SCRAM_SHA_512.type_code


def upsert(name: str, mech: int = SHA512, iterations: int = 8192, pw: str = "pw") -> Any:
    m = SCRAM_SHA_512 if mech == SHA512 else SCRAM_SHA_256
    salted = salted_password(m, pw, b"salt", iterations) if mech in (SHA256, SHA512) else b"x"
    return ScramCredentialUpsertion(name, mech, iterations, b"salt", salted)


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

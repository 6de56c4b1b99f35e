"""The SCRAM credential APIs' operations (broker/operations/*_user_scram_credentials.py, KIP-554),
each tested once, whichever door serves it: called directly with a `Session` on a context with
an in-memory credential store (tests/unit/broker/harness.py's; Kafka's checks are tested as
pure functions in tests/unit/broker/test_scram_admin.py) and, where a test says so, a real
Authorizer. The codecs are test_scram_codecs.py's.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from broker.operations import alter_user_scram_credentials as alter
from broker.operations import describe_user_scram_credentials as describe
from broker.security.authorizer import Authorizer, parse_super_users
from broker.session import Session
from protocol.api.scram import CredentialInfo, ScramCredentialDeletion
from protocol.errors import ClusterAuthorizationFailedError, UnknownServerError
from protocol.principal import KafkaPrincipal
from tests.unit.broker.harness import MemoryCredentialStore as MemoryStore
from tests.unit.broker.test_scram_admin import SHA512, upsert

SESSION = Session()

# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "AlterUserScramCredentials": alter.AlterUserScramCredentials((), (upsert("alice"),)),
    "DescribeUserScramCredentials": describe.DescribeUserScramCredentials(None),
}
CONTEXTS: dict[str, Any] = {
    "AlterUserScramCredentials": {"credentials": MemoryStore()},
    "DescribeUserScramCredentials": {"credentials": MemoryStore()},
}


def ctx(store: Any, authorizer: Authorizer | None = None) -> Any:
    return SimpleNamespace(credentials=store, authorizer=authorizer)


async def test_alter_then_describe_then_delete() -> None:
    store = MemoryStore()
    asked = alter.AlterUserScramCredentials((), (upsert("alice"), upsert("", iterations=1)))
    altered = await alter.run(ctx(store), SESSION, asked)
    # the users in error first, then the users written
    assert [(r.user, r.error_code) for r in altered.results] == [("", 93), ("alice", 0)]
    assert store.writes[0][0] == "alice"
    described = await describe.run(ctx(store), SESSION, describe.DescribeUserScramCredentials(None))
    assert described.error_code == 0
    assert [(r.user, r.credential_infos) for r in described.results] == [
        ("alice", [CredentialInfo(SHA512, 8192)])
    ]
    named = describe.DescribeUserScramCredentials(("alice", "nobody"))
    found = await describe.run(ctx(store), SESSION, named)
    assert [(r.user, r.error_code) for r in found.results] == [("alice", 0), ("nobody", 91)]
    gone = alter.AlterUserScramCredentials((ScramCredentialDeletion("alice", SHA512),), ())
    deleted = await alter.run(ctx(store), SESSION, gone)
    assert [(r.user, r.error_code) for r in deleted.results] == [("alice", 0)]
    assert store.lookup("SCRAM-SHA-512", "alice") is None


async def test_alter_needs_cluster_alter_and_describe_cluster_describe() -> None:
    store = MemoryStore()
    authorizer = Authorizer(super_users=parse_super_users("User:admin"))
    bob = Session(principal=KafkaPrincipal.user("bob"), peer_host="127.0.0.1")
    asked = alter.AlterUserScramCredentials((), (upsert("alice"), upsert("carol")))
    denied = await alter.run(ctx(store, authorizer), bob, asked)
    refused = ClusterAuthorizationFailedError.code
    assert [(r.user, r.error_code) for r in denied.results] == [("alice", refused),
                                                                ("carol", refused)]  # fmt: skip
    assert store.writes == []
    everyone = describe.DescribeUserScramCredentials(None)
    hidden = await describe.run(ctx(store, authorizer), bob, everyone)
    assert hidden.error_code == refused and hidden.results == ()
    admin = Session(principal=KafkaPrincipal.user("admin"), peer_host="127.0.0.1")
    allowed = await alter.run(ctx(store, authorizer), admin, asked)
    assert [(r.user, r.error_code) for r in allowed.results] == [("alice", 0), ("carol", 0)]


class FailingStore(MemoryStore):
    """ZooKeeper trouble: every read and write raises."""

    async def read_user(self, user: str) -> Any:
        raise ConnectionError("zk down")

    async def read_all_users(self) -> Any:
        raise ConnectionError("zk down")

    async def alter(self, user: str, changes: Any) -> None:
        raise ConnectionError("zk down")


async def test_zookeeper_trouble_is_unknown_server_error_saying_why() -> None:
    broken = FailingStore()
    described = await describe.run(
        ctx(broken), SESSION, describe.DescribeUserScramCredentials(None)
    )
    assert described.error_code == UnknownServerError.code
    assert "zk down" in (described.error_message or "")

    class WriteFails(FailingStore):
        async def read_user(self, user: str) -> Any:
            return {}

    altered = await alter.run(ctx(WriteFails()), SESSION,
                              alter.AlterUserScramCredentials((), (upsert("alice"),)))  # fmt: skip
    assert [(r.user, r.error_code) for r in altered.results] == [("alice", UnknownServerError.code)]
    assert "zk down" in (altered.results[0].error_message or "")

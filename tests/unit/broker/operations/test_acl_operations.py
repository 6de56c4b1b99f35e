"""The ACL APIs' operations (broker/operations/{describe,create,delete}_acls.py), each tested
once, whichever door serves it: called directly with a `Session` on a context holding a real
Authorizer whose ACL store is coordinator/cluster/acls.py over an in-memory ZooKeeper. The
service's own pieces (ordering, a deleted binding under every filter that matches it, ZooKeeper
paths) are tests/unit/coordinator/test_acl_store.py's; the doors' codecs test_acl_codecs.py's.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from broker.operations import create_acls, delete_acls, describe_acls
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from coordinator.cluster.acls import ZkAclStore
from protocol.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.api.acls import AclBindingData, AclFilterData
from protocol.errors import (
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    SecurityDisabledError,
)
from protocol.principal import KafkaPrincipal
from tests.unit.coordinator.test_acl_store import MemoryZk

TOPIC, CLUSTER = int(ResourceType.TOPIC), int(ResourceType.CLUSTER)
LIT, PRE = int(PatternType.LITERAL), int(PatternType.PREFIXED)
READ, WRITE = int(AclOperation.READ), int(AclOperation.WRITE)
ALLOW = int(AclPermissionType.ALLOW)
ADMIN, ALICE = KafkaPrincipal.user("admin"), KafkaPrincipal.user("alice")
AS_ADMIN = Session(principal=ADMIN, peer_host="127.0.0.1", peer_port=5555)
AS_ALICE = Session(principal=ALICE, peer_host="127.0.0.1", peer_port=5555)
INVALID = InvalidRequestError.code
UNKNOWN_PATTERN = AclFilterData(pattern_type=int(PatternType.UNKNOWN))  # not a valid filter


def acl(name: str = "orders", op: int = READ, pattern: int = LIT,
        principal: str = "User:alice") -> AclBindingData:  # fmt: skip
    return AclBindingData(TOPIC, name, pattern, principal, "*", op, ALLOW)


# For test_table.py: a request per API. Its Recording authorizer has no ACL cache or store
# behind it, so each sample is one the operation refuses after its check (an invalid filter or
# creation), before it would read or write ACLs.
SAMPLES: dict[str, Any] = {
    "DescribeAcls": describe_acls.DescribeAcls(UNKNOWN_PATTERN),
    "CreateAcls": create_acls.CreateAcls((acl(principal="no-type"),)),
    "DeleteAcls": delete_acls.DeleteAcls((UNKNOWN_PATTERN,)),
}


def acl_context() -> Any:
    """A context whose authorizer stores ACLs in an in-memory ZooKeeper; `admin` is a super
    user."""
    auth = Authorizer(AclCache(), super_users=frozenset({ADMIN}))
    auth.store = ZkAclStore(MemoryZk(), auth.cache)  # type: ignore[arg-type]
    return SimpleNamespace(authorizer=auth)


async def test_create_describe_and_delete_through_the_operations() -> None:
    ctx = acl_context()
    created = await create_acls.run(ctx, AS_ADMIN, create_acls.CreateAcls((
        acl(), acl(principal="alice"), acl("ord", WRITE, PRE),
    )))  # fmt: skip
    assert [r.error_code for r in created.results] == [0, INVALID, 0]
    assert "alice" in (created.results[1].error_message or "")
    described = describe_acls.run(ctx, AS_ADMIN, describe_acls.DescribeAcls(AclFilterData()))
    assert described.error_code == 0
    assert described.bindings == (acl("ord", WRITE, PRE), acl())  # by name
    deleted = await delete_acls.run(ctx, AS_ADMIN, delete_acls.DeleteAcls((
        AclFilterData(TOPIC, "orders", int(PatternType.MATCH)), UNKNOWN_PATTERN,
        AclFilterData(operation=WRITE),
    )))  # fmt: skip
    first, invalid, writes = deleted.results
    assert first.error_code == 0 and set(first.deleted) == {acl(), acl("ord", WRITE, PRE)}
    assert invalid.error_code == INVALID and invalid.deleted == ()
    assert writes.deleted == (acl("ord", WRITE, PRE),)  # under every filter that matches it
    empty = describe_acls.run(ctx, AS_ADMIN, describe_acls.DescribeAcls(AclFilterData()))
    assert empty.bindings == ()


async def test_without_an_authorizer_every_acl_api_is_security_disabled() -> None:
    ctx: Any = SimpleNamespace(authorizer=None)
    code = SecurityDisabledError.code
    described = describe_acls.run(ctx, AS_ADMIN, describe_acls.DescribeAcls(AclFilterData()))
    assert described.error_code == code and "authorizer" in (described.error_message or "")
    created = await create_acls.run(ctx, AS_ADMIN, create_acls.CreateAcls((acl(), acl("x"))))
    assert [r.error_code for r in created.results] == [code, code]
    deleted = await delete_acls.run(ctx, AS_ADMIN, delete_acls.DeleteAcls((AclFilterData(),)))
    assert [r.error_code for r in deleted.results] == [code]


async def test_describe_needs_describe_and_create_delete_need_alter_on_the_cluster() -> None:
    ctx = acl_context()
    await create_acls.run(ctx, AS_ADMIN, create_acls.CreateAcls((acl(),)))
    refused = ClusterAuthorizationFailedError.code
    described = describe_acls.run(ctx, AS_ALICE, describe_acls.DescribeAcls(AclFilterData()))
    assert (described.error_code, described.bindings) == (refused, ())
    created = await create_acls.run(ctx, AS_ALICE, create_acls.CreateAcls((acl("x"), acl("y"))))
    assert [r.error_code for r in created.results] == [refused, refused]
    deleted = await delete_acls.run(ctx, AS_ALICE, delete_acls.DeleteAcls((AclFilterData(),)))
    assert [r.error_code for r in deleted.results] == [refused]
    # Describe on the cluster lets alice describe, not alter
    cluster = AclBindingData(CLUSTER, "kafka-cluster", LIT, "User:alice", "*",
                             int(AclOperation.DESCRIBE), ALLOW)  # fmt: skip
    assert (await create_acls.run(ctx, AS_ADMIN, create_acls.CreateAcls((cluster,)))).results[
        0
    ].error_code == 0
    allowed = describe_acls.run(ctx, AS_ALICE, describe_acls.DescribeAcls(AclFilterData()))
    assert allowed.error_code == 0 and acl() in allowed.bindings
    still = await delete_acls.run(ctx, AS_ALICE, delete_acls.DeleteAcls((AclFilterData(),)))
    assert [r.error_code for r in still.results] == [refused]


def test_an_invalid_filter_is_invalid_request_saying_why() -> None:
    ctx = acl_context()
    answer = describe_acls.run(ctx, AS_ADMIN, describe_acls.DescribeAcls(UNKNOWN_PATTERN))
    assert answer.error_code == INVALID and answer.error_message

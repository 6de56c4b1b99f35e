"""coordinator/cluster/acls.py over an in-memory ZooKeeper: Kafka's paths and JSON, the
conditional read-modify-write, change notifications and how a second broker's cache follows
them; and broker/security/acl_admin.py (the service behind the Create/Describe/DeleteAcls
operations, whose refusals tests/unit/broker/operations/test_acl_operations.py tests) on top."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from broker.security import acl_admin as service
from broker.security.authorizer import AclCache, Authorizer
from coordinator.cluster.acls import (
    KAFKA_ACL_CHANGES,
    KAFKA_ACL_EXTENDED_CHANGES,
    MAX_CHANGES_KEPT,
    ZkAclStore,
    pattern_path,
)
from coordinator.cluster.zk import ZkBadVersion, ZkNodeExists, ZkNoNode
from protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from protocol.errors import (
    InvalidRequestError,
)
from protocol.principal import KafkaPrincipal

T, C = ResourceType.TOPIC, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALICE, ADMIN = KafkaPrincipal.user("alice"), KafkaPrincipal.user("admin")


class MemoryZk:
    """The ZooKeeper calls the store makes, over a dict path -> (data, version)."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[bytes, int]] = {"/": (b"", 0)}
        self.seq = 0
        self.race: list[str] = []  # paths whose next conditional write loses once

    def _parent(self, path: str) -> str:
        return path.rsplit("/", 1)[0] or "/"

    async def get(self, path: str) -> tuple[bytes, int]:
        if path not in self.nodes:
            raise ZkNoNode(path, path)
        return self.nodes[path]

    async def create(
        self,
        path: str,
        data: bytes = b"",
        makepath: bool = False,
        sequence: bool = False,
        ephemeral: bool = False,
    ) -> str:
        if sequence:
            path = f"{path}{self.seq:010d}"
            self.seq += 1
        if path in self.race:
            self.race.remove(path)
            self.nodes[path] = (b'{"version":1,"acls":[]}', 0)
            raise ZkNodeExists(path, path)
        if path in self.nodes:
            raise ZkNodeExists(path, path)
        if self._parent(path) not in self.nodes:
            if not makepath:
                raise ZkNoNode(path, path)
            await self.ensure_path(self._parent(path))
        self.nodes[path] = (data, 0)
        return path

    async def set(self, path: str, data: bytes, version: int = -1) -> int:
        if path not in self.nodes:
            raise ZkNoNode(path, path)
        current = self.nodes[path][1]
        if path in self.race:
            self.race.remove(path)
            raise ZkBadVersion(path, path)
        if version not in (-1, current):
            raise ZkBadVersion(path, path)
        self.nodes[path] = (data, current + 1)
        return current + 1

    async def delete(self, path: str, version: int = -1) -> None:
        if path not in self.nodes:
            raise ZkNoNode(path, path)
        if version not in (-1, self.nodes[path][1]):
            raise ZkBadVersion(path, path)
        del self.nodes[path]

    async def get_children(self, path: str) -> list[str]:
        if path not in self.nodes:
            raise ZkNoNode(path, path)
        prefix = path.rstrip("/") + "/"
        return sorted(
            p[len(prefix) :]
            for p in self.nodes
            if p.startswith(prefix) and "/" not in p[len(prefix) :]
        )

    async def ensure_path(self, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            self.nodes.setdefault("/" + "/".join(parts[:i]), (b"", 0))

    def add_state_listener(self, cb: object) -> None: ...

    def remove_state_listener(self, cb: object) -> None: ...


def binding(
    name: str = "orders",
    op: AclOperation = AclOperation.READ,
    pattern: PatternType = LIT,
    perm: AclPermissionType = ALLOW,
    kind: ResourceType = T,
) -> AclBinding:
    return AclBinding(kind, name, pattern, ALICE, "*", op, perm)


def store(zk: MemoryZk) -> tuple[ZkAclStore, AclCache]:
    cache = AclCache()
    return ZkAclStore(zk, cache), cache  # type: ignore[arg-type]  # duck-typed ZooKeeper


async def test_kafkas_paths_json_and_notifications() -> None:
    zk = MemoryZk()
    s, cache = store(zk)
    b = binding()
    await s.update(b.pattern, lambda cur: cur | {b.entry})
    data, _ = zk.nodes["/kafka-acl/Topic/orders"]
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
        ],
    }
    assert zk.nodes[f"{KAFKA_ACL_CHANGES}/acl_changes_0000000000"][0] == b"TOPIC:orders"
    p = binding("app-", pattern=PRE, kind=ResourceType.GROUP)
    await s.update(p.pattern, lambda cur: cur | {p.entry})
    assert "/kafka-acl-extended/prefixed/Group/app-" in zk.nodes
    change = json.loads(zk.nodes[f"{KAFKA_ACL_EXTENDED_CHANGES}/acl_changes_0000000001"][0])
    assert change == {
        "version": 1,
        "resourceType": "GROUP",
        "name": "app-",
        "patternType": "PREFIXED",
    }
    assert len(cache) == 2  # the writer's own cache at once
    await s.update(b.pattern, lambda cur: frozenset())
    assert "/kafka-acl/Topic/orders" not in zk.nodes  # an empty set removes the node
    assert (
        pattern_path(ResourcePattern(C, "kafka-cluster", LIT)) == "/kafka-acl/Cluster/kafka-cluster"
    )
    with pytest.raises(InvalidRequestError, match="cannot be stored in ZooKeeper"):
        pattern_path(ResourcePattern(ResourceType.GROUP, "a/b", LIT))


async def test_a_lost_race_reads_again_and_keeps_both_writes() -> None:
    zk = MemoryZk()
    s, _ = store(zk)
    first, second = binding(), binding(op=AclOperation.WRITE)
    zk.race.append("/kafka-acl/Topic/orders")  # someone creates the node between read and create
    await s.update(first.pattern, lambda cur: cur | {first.entry})
    zk.race.append("/kafka-acl/Topic/orders")  # and changes it between read and set
    await s.update(second.pattern, lambda cur: cur | {second.entry})
    stored, _ = await s.read(first.pattern)
    assert stored == {first.entry, second.entry}


async def test_a_second_broker_follows_changes_and_purges_force_a_reload() -> None:
    zk = MemoryZk()
    writer, _ = store(zk)
    b = binding()
    await writer.update(b.pattern, lambda cur: cur | {b.entry})
    follower, cache = store(zk)
    assert await follower.load_all() == 1 and len(cache) == 1
    follower._last_seq = {KAFKA_ACL_CHANGES: 0, KAFKA_ACL_EXTENDED_CHANGES: -1}
    w = binding("ord", AclOperation.WRITE, PRE)
    await writer.update(w.pattern, lambda cur: cur | {w.entry})
    await writer.update(b.pattern, lambda cur: frozenset())
    follower._children = {root: await zk.get_children(root) for root in follower._children}
    assert await follower.process() == {b.pattern, w.pattern}
    assert cache.bindings() == [w]
    # a notification purged before the follower read it: everything is read again
    zk.nodes.pop(f"{KAFKA_ACL_CHANGES}/acl_changes_0000000002")
    follower._last_seq = {KAFKA_ACL_CHANGES: 0, KAFKA_ACL_EXTENDED_CHANGES: 0}
    cache.replace(ResourcePattern(T, "stale", LIT), [b.entry])  # something ZooKeeper no longer has
    follower._children = {root: await zk.get_children(root) for root in follower._children}
    follower._children[KAFKA_ACL_CHANGES].append("acl_changes_0000000002")
    assert await follower.process() == set()  # a full reload
    assert cache.bindings() == [w]


async def test_writers_keep_only_the_newest_notifications() -> None:
    zk = MemoryZk()
    s, _ = store(zk)
    b = binding()
    for i in range(MAX_CHANGES_KEPT + 5):
        await s.update(
            b.pattern,
            lambda cur, i=i: frozenset(
                {
                    AclBinding(  # type: ignore[misc]
                        T,
                        "orders",
                        LIT,
                        KafkaPrincipal.user(f"u{i}"),
                        "*",
                        AclOperation.READ,
                        ALLOW,
                    ).entry
                }
            ),
        )
    assert len(await zk.get_children(KAFKA_ACL_CHANGES)) == MAX_CHANGES_KEPT


@dataclass
class FakeSession:
    principal: KafkaPrincipal
    peer_host: str = "127.0.0.1"


async def test_service_create_describe_delete() -> None:
    zk = MemoryZk()
    auth = Authorizer(AclCache(), super_users=frozenset({ADMIN}))
    s = ZkAclStore(zk, auth.cache)  # type: ignore[arg-type]
    auth.store = s
    admin = FakeSession(ADMIN)
    good, prefixed = binding(), binding("ord", AclOperation.WRITE, PRE)
    bad = binding(kind=C, name="not-the-cluster")
    results = await service.create(auth, admin, [good, bad, prefixed, InvalidRequestError("x")])
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], InvalidRequestError) and "kafka-cluster" in results[1].message
    assert isinstance(results[3], InvalidRequestError)
    assert service.describe(auth, AclBindingFilter()) == [prefixed, good]  # by name
    match = AclBindingFilter(T, "orders", PatternType.MATCH)
    assert service.describe(auth, match) == [prefixed, good]
    deleted = await service.delete(
        auth,
        admin,
        [AclBindingFilter(T, "ord", PRE), match, AclBindingFilter(operation=AclOperation.UNKNOWN)],
    )
    assert deleted[0] == (None, [prefixed])
    assert deleted[1][0] is None and sorted(map(str, deleted[1][1])) == sorted(
        map(str, [good, prefixed])
    )
    assert isinstance(deleted[2][0], InvalidRequestError)
    assert service.describe(auth, AclBindingFilter()) == []
    assert [p for p in zk.nodes if p.startswith("/kafka-acl/Topic/")] == []


async def test_a_lost_session_reloads_everything() -> None:
    zk = MemoryZk()
    writer, _ = store(zk)
    follower, cache = store(zk)
    b = binding()
    await writer.update(b.pattern, lambda cur: cur | {b.entry})
    cache.replace(ResourcePattern(T, "gone", LIT), [b.entry])  # deleted while we were away
    follower._on_state("LOST")  # watch events may have been missed: no notification is seen
    assert await follower.process() == set()
    assert cache.bindings() == [b]

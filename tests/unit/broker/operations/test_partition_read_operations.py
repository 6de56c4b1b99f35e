"""The partition reads' operations besides Fetch (broker/operations/list_offsets.py,
offset_for_leader_epoch.py), tested
once, whichever door serves them: called directly with a `Session` on an in-process broker
(tests/unit/broker/harness.py). The doors' codecs are tested apart (test_partition_read_codecs.py).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker.operations import list_offsets
from broker.operations import offset_for_leader_epoch as ofle
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from protocol.acl import AclOperation, ResourceType
from protocol.errors import (
    FencedLeaderEpochError,
    NotLeaderForPartitionError,
    TopicAuthorizationFailedError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from protocol.principal import KafkaPrincipal
from tests.unit.broker.harness import running_broker
from tests.unit.broker.helpers import batch, produce
from tests.unit.broker.test_acl_rules import grant

SESSION = Session(principal=KafkaPrincipal.user("alice"), peer_host="127.0.0.1", peer_port=5555)


def _no_offsets(*_: Any) -> tuple[int, int, int, int]:
    return UnknownTopicOrPartitionError.code, -1, -1, -1


def _no_epochs(*_: Any) -> tuple[int, int, int]:
    return UnknownTopicOrPartitionError.code, -1, -1


# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "ListOffsets": list_offsets.ListOffsets((("t", (list_offsets.Asked(0, -1),)),)),
    "OffsetForLeaderEpoch": ofle.OffsetForLeaderEpoch((("t", (ofle.Asked(0, -1, 0),)),)),
}
CONTEXTS: dict[str, Any] = {
    "ListOffsets": {"replicas": SimpleNamespace(list_offset=_no_offsets)},
    "OffsetForLeaderEpoch": {"replicas": SimpleNamespace(end_offset_for_epoch=_no_epochs)},
}


def ask(topic: str, ts: int) -> list_offsets.ListOffsets:
    return list_offsets.ListOffsets(((topic, (list_offsets.Asked(0, ts),)),))


async def test_list_offsets_earliest_latest_and_by_time(tmp_path: Path) -> None:
    """Moved from test_admin.py (the native door's)."""
    async with running_broker(tmp_path) as b:
        await b.lead("o")
        conn = await b.connect()
        for i in range(3):
            await conn.send(produce("o", 0, batch(10, ts_ms=1000 * (i + 1))))

        def lookup(ts: int, topic: str = "o") -> tuple[int, int]:
            (listed,) = list_offsets.run(b.ctx, SESSION, ask(topic, ts)).topics[0][1]
            return listed.error_code, listed.offset

        assert lookup(-2) == (0, 0)
        assert lookup(-1) == (0, 30)
        assert lookup(1500) == (0, 10)
        assert lookup(3000) == (0, 20)
        assert lookup(9000) == (0, -1)
        assert lookup(-1, "nope")[0] == UnknownTopicOrPartitionError.code


async def test_list_offsets_refuses_each_partition_of_a_topic_not_described(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("o", partitions=2)
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        both = list_offsets.ListOffsets(
            (("o", (list_offsets.Asked(0, -1), list_offsets.Asked(1, -2))),)
        )
        refused = list_offsets.run(b.ctx, SESSION, both).topics
        auth = TopicAuthorizationFailedError.code
        assert [(p.partition, p.error_code) for p in refused[0][1]] == [(0, auth), (1, auth)]
        grant(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, "o")
        allowed = list_offsets.run(b.ctx, SESSION, both).topics
        assert [(p.partition, p.error_code, p.offset) for p in allowed[0][1]] == [
            (0, 0, 0), (1, 0, 0)]  # fmt: skip


async def test_list_offsets_refuses_a_special_timestamp_its_version_cannot_carry(
    tmp_path: Path,
) -> None:
    """Kafka's ReplicaManager.fetchOffset: -3 needs v7, -4 v8, -5 v9, -6 v11; any other negative
    timestamp is UNSUPPORTED_VERSION at every version (and from the native door, which gives no
    version), on its own partition, before the leader is looked up (an unknown topic too)."""
    async with running_broker(tmp_path) as b:
        await b.lead("o")

        def code(ts: int, version: int | None, topic: str = "o") -> int:
            req = list_offsets.ListOffsets(((topic, (list_offsets.Asked(0, ts),)),),
                                           version=version)  # fmt: skip
            (listed,) = list_offsets.run(b.ctx, SESSION, req).topics[0][1]
            return listed.error_code

        unsupported = UnsupportedVersionError.code
        for ts, since in ((-3, 7), (-4, 8), (-5, 9), (-6, 11)):
            assert (code(ts, since - 1), code(ts, since), code(ts, None)) == (unsupported, 0, 0)
        assert [code(ts, 1) for ts in (-1, -2, 0)] == [0, 0, 0]
        assert [code(ts, v) for ts in (-7, -100) for v in (1, 11, None)] == [unsupported] * 6
        assert code(-3, 1, "nope") == unsupported


def epochs(topic: str, *asked: ofle.Asked) -> ofle.OffsetForLeaderEpoch:
    return ofle.OffsetForLeaderEpoch(((topic, asked),))


def ends(result: ofle.OffsetForLeaderEpochResult) -> list[tuple[int, int, int]]:
    ((_, answered),) = result.topics
    return [(e.error_code, e.leader_epoch, e.end_offset) for e in answered]


async def test_offset_for_leader_epoch_finds_where_an_epoch_ends_on_the_leader_only(
    tmp_path: Path,
) -> None:
    """The leader answers, for its latest epoch, the log end; for an epoch above it -1/-1; for
    one below the first it knows, the first's start (Kafka's rules), after fencing
    `current_leader_epoch` as Fetch does; a partition it does not lead, or does not know, is
    refused."""
    async with running_broker(tmp_path) as b:
        b.leader_epochs[("o", 0)] = 2
        await b.lead("o")
        await b.lead("f", leader=2)
        conn = await b.connect()
        for _ in range(3):
            await conn.send(produce("o", 0, batch(10)))
        asked = epochs("o", ofle.Asked(0, -1, 2), ofle.Asked(0, 2, 7), ofle.Asked(0, -1, 1),
                       ofle.Asked(0, 1, 2), ofle.Asked(0, 3, 2))  # fmt: skip
        assert ends(ofle.run(b.ctx, SESSION, asked)) == [
            (0, 2, 30), (0, -1, -1), (0, 1, 0),
            (FencedLeaderEpochError.code, -1, -1), (UnknownLeaderEpochError.code, -1, -1),
        ]  # fmt: skip
        elsewhere = ofle.run(b.ctx, SESSION, epochs("f", ofle.Asked(0, -1, 0)))
        assert ends(elsewhere) == [(NotLeaderForPartitionError.code, -1, -1)]
        unknown = ofle.run(b.ctx, SESSION, epochs("nope", ofle.Asked(0, -1, 0)))
        assert ends(unknown) == [(UnknownTopicOrPartitionError.code, -1, -1)]


async def test_offset_for_leader_epoch_needs_cluster_action_or_describe_on_each_topic(
    tmp_path: Path,
) -> None:
    """Kafka's rule: ClusterAction on the cluster (a follower) covers every topic; a client
    needs Describe on each, or its partitions are TOPIC_AUTHORIZATION_FAILED."""
    async with running_broker(tmp_path) as b:
        await b.lead("o", partitions=2)
        await b.lead("p")
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        first = ofle.Asked(0, -1, 0)
        req = ofle.OffsetForLeaderEpoch((("o", (first, ofle.Asked(1, -1, 0))), ("p", (first,))))

        def codes() -> list[tuple[str, list[int]]]:
            result = ofle.run(b.ctx, SESSION, req)
            return [(name, [e.error_code for e in answered]) for name, answered in result.topics]

        auth = TopicAuthorizationFailedError.code
        assert codes() == [("o", [auth, auth]), ("p", [auth])]
        grant(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, "p")
        assert codes() == [("o", [auth, auth]), ("p", [0])]
        grant(authz, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)
        assert codes() == [("o", [0, 0]), ("p", [0])]

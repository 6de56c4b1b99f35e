"""The share groups' offsets operations (KIP-932; broker/operations/*_share_group_offsets.py)
and DeleteGroups of a share group, each behaviour tested once: called directly on an
in-process broker (tests/unit/broker/harness.py) that leads the topic, coordinates the group
and is the share coordinator, with the leader's share partitions kept durable through it.
The real clients' view is tests/integration/test_share_groups.py's.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from broker.operations import (
    alter_share_group_offsets,
    delete_groups,
    delete_share_group_offsets,
    describe_share_group_offsets,
    share_fetch,
    share_group_heartbeat,
)
from broker.operations.share_requests import AckBatch
from broker.security.authorizer import AclCache, Authorizer
from broker.share.manager import SharePartitionManager
from broker.share.settings import share_settings
from broker.share.share_partition import Acquired
from protocol.acl import AclOperation, ResourceType
from protocol.clock import ManualClock
from tests.unit.broker.harness import BrokerHarness, running_broker
from tests.unit.broker.operations.test_group_operations import coordinate_groups, give_id, join, run
from tests.unit.broker.operations.test_share_operations import fetch, hb, produced
from tests.unit.broker.operations.test_share_state_operations import coordinate_shares
from tests.unit.broker.test_acl_rules import grant

ACCEPT = 1
UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST = 3, 42
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 29, 30
NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND = 68, 69

# For test_table.py: a request model per API.
SAMPLES: dict[str, Any] = {
    "DescribeShareGroupOffsets": describe_share_group_offsets.DescribeShareGroupOffsets(
        (describe_share_group_offsets.AskedGroup("s", (("t", (0,)),)),)
    ),
    "AlterShareGroupOffsets": alter_share_group_offsets.AlterShareGroupOffsets(
        "s", (("t", ((0, 0),)),)
    ),
    "DeleteShareGroupOffsets": delete_share_group_offsets.DeleteShareGroupOffsets("s", ("t",)),
}


def describe(group: str = "s", topics: Any = None) -> Any:
    asked = describe_share_group_offsets.AskedGroup(group, topics)
    return describe_share_group_offsets.DescribeShareGroupOffsets((asked,))


def offsets(result: Any) -> list[tuple[str, int, int, int, int]]:
    """(topic, partition, start offset, lag, error) of the one group described."""
    [group] = result.groups
    assert group.error_code == 0, group
    return [(t.topic, p.partition, p.start_offset, p.lag, p.error_code)
            for t in group.topics for p in t.partitions]  # fmt: skip


def alter(offset: int, topic: str = "t", group: str = "s") -> Any:
    return alter_share_group_offsets.AlterShareGroupOffsets(group, ((topic, ((0, offset),)),))


async def durable_broker(b: BrokerHarness, clock: ManualClock) -> uuid.UUID:
    """Lead "t" (with 10 records), coordinate groups and share state; share partitions kept
    through the share coordinator, as the daemon's."""
    ctx = b.ctx
    ctx.share = SharePartitionManager(
        ctx.replicas, ctx.clock, share_settings(lambda: ctx.config, ctx.groups.configs.overrides),
        persister=ctx.share_persister,
    )  # fmt: skip
    await b.lead("t")
    topic_id = await give_id(b, "t")
    await coordinate_groups(b, clock)
    await coordinate_shares(b)
    await produced(b, 10)
    ctx.groups.configs.apply("s", {"share.auto.offset.reset": "earliest"})
    return topic_id


async def test_describe_alter_and_delete_share_group_offsets_through_the_share_coordinator(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        topic_id = await durable_broker(b, clock)
        joined = await run(share_group_heartbeat.run, b, hb("m1", 0, ("t",)))
        # no state yet: start offset and lag -1
        assert offsets(await run(describe_share_group_offsets.run, b, describe())) == [
            ("t", 0, -1, -1, 0)
        ]
        got = await run(share_fetch.run, b, fetch("m1", 0, topic_id))
        assert got.partitions[0].acquired == (Acquired(0, 9, 1),)
        acked = await run(share_fetch.run, b, fetch("m1", 1, topic_id, AckBatch(0, 3, (ACCEPT,))))
        assert acked.partitions[0].acknowledge_error_code == 0
        # all topics (None) is the group's topics with state; lag = HW 10 - start 4
        assert offsets(await run(describe_share_group_offsets.run, b, describe())) == [
            ("t", 0, 4, 6, 0)
        ]
        named = describe(topics=(("t", (0, 5)), ("nope", (0,))))
        assert offsets(await run(describe_share_group_offsets.run, b, named)) == [
            ("t", 0, 4, 6, 0), ("t", 5, -1, -1, UNKNOWN_TOPIC_OR_PARTITION),
            ("nope", 0, -1, -1, UNKNOWN_TOPIC_OR_PARTITION),
        ]  # fmt: skip

        # only an Empty group's offsets change
        busy = await run(alter_share_group_offsets.run, b, alter(8))
        assert busy.error_code == NON_EMPTY_GROUP
        busy_delete = delete_share_group_offsets.DeleteShareGroupOffsets("s", ("t",))
        assert (await run(delete_share_group_offsets.run, b, busy_delete)).error_code == (
            NON_EMPTY_GROUP
        )
        await run(share_group_heartbeat.run, b, hb("m1", -1))  # m1 leaves: Empty
        assert joined.error_code == 0

        altered = await run(alter_share_group_offsets.run, b, alter(8))
        assert [(t.topic, t.topic_id, [p.error_code for p in t.partitions])
                for t in altered.topics] == [("t", topic_id, [0])]  # fmt: skip
        assert offsets(await run(describe_share_group_offsets.run, b, describe())) == [
            ("t", 0, 8, 2, 0)
        ]
        # the leader drops what it held: the next member starts at 8, its records fresh
        again = await run(share_fetch.run, b, fetch("m2", 0, topic_id))
        assert again.partitions[0].acquired == (Acquired(8, 9, 1),)
        await run(share_fetch.run, b, fetch("m2", -1, topic_id))  # m2's session closes

        bad = await run(alter_share_group_offsets.run, b, alter(-1))
        assert bad.topics[0].partitions[0].error_code == INVALID_REQUEST
        unknown = await run(alter_share_group_offsets.run, b, alter(0, topic="nope"))
        assert unknown.topics[0].partitions[0].error_code == UNKNOWN_TOPIC_OR_PARTITION

        delete = delete_share_group_offsets.DeleteShareGroupOffsets("s", ("t",))
        deleted = await run(delete_share_group_offsets.run, b, delete)
        assert (deleted.error_code, [t.error_code for t in deleted.topics]) == (0, [0])
        assert offsets(await run(describe_share_group_offsets.run, b, describe())) == []
        assert (await b.ctx.share_persister.summary("s", "t", 0)).start_offset == -1


async def test_alter_makes_an_empty_share_group_and_delete_groups_deletes_its_state(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await durable_broker(b, clock)
        altered = await run(alter_share_group_offsets.run, b, alter(3, group="fresh"))
        assert altered.error_code == 0
        assert b.ctx.groups.share.is_share_group("fresh")
        assert (await b.ctx.share_persister.summary("fresh", "t", 0)).start_offset == 3

        gone = await run(delete_groups.run, b, delete_groups.DeleteGroups(("fresh",)))
        assert [r.error_code for r in gone.results] == [0]
        assert (await b.ctx.share_persister.summary("fresh", "t", 0)).start_offset == -1
        assert not b.ctx.groups.share.is_share_group("fresh")

        await join(b, "g")  # a classic group's id is not a share group's
        classic = await run(alter_share_group_offsets.run, b, alter(0, group="g"))
        assert classic.error_code == GROUP_ID_NOT_FOUND
        described = await run(describe_share_group_offsets.run, b, describe("g"))
        assert described.groups[0].error_code == GROUP_ID_NOT_FOUND


async def test_share_group_offsets_need_the_groups_and_the_topics_acls(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await durable_broker(b, clock)
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        delete = delete_share_group_offsets.DeleteShareGroupOffsets("s", ("t",))
        assert (await run(alter_share_group_offsets.run, b, alter(1))).error_code == (
            GROUP_AUTHORIZATION_FAILED
        )
        assert (await run(delete_share_group_offsets.run, b, delete)).error_code == (
            GROUP_AUTHORIZATION_FAILED
        )
        refused = await run(describe_share_group_offsets.run, b, describe(topics=(("t", (0,)),)))
        assert refused.groups[0].error_code == GROUP_AUTHORIZATION_FAILED

        grant(authz, AclOperation.READ, ResourceType.GROUP, "s")
        grant(authz, AclOperation.DELETE, ResourceType.GROUP, "s")
        no_topic = await run(alter_share_group_offsets.run, b, alter(1))
        assert no_topic.topics[0].partitions[0].error_code == TOPIC_AUTHORIZATION_FAILED
        assert (await run(delete_share_group_offsets.run, b, delete)).topics[0].error_code == (
            TOPIC_AUTHORIZATION_FAILED
        )
        named = await run(describe_share_group_offsets.run, b, describe(topics=(("t", (0,)),)))
        assert offsets(named) == [("t", 0, -1, -1, TOPIC_AUTHORIZATION_FAILED)]

        grant(authz, AclOperation.READ, ResourceType.TOPIC, "t")
        assert (await run(alter_share_group_offsets.run, b, alter(1))).topics[0].partitions[
            0
        ].error_code == 0
        assert offsets(await run(describe_share_group_offsets.run, b, describe())) == [
            ("t", 0, 1, 9, 0)
        ]  # Describe on the group and the topic: READ on each implies it, as Kafka's ACLs

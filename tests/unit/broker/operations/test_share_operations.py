"""The share-group operations (KIP-932; broker/operations/share_*.py), each behaviour tested
once: called directly with a `Session` on an in-process broker (tests/unit/broker/harness.py)
with the real group coordinator, replica manager and share partitions, on a manual clock. The
codecs' golden bytes are test_share_codecs.py's; the real client is
tests/integration/test_share_groups.py's.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

from broker.operations import (
    consumer_group_heartbeat,
    delete_groups,
    join_group,
    list_groups,
    produce,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
)
from broker.operations.share_requests import AckBatch, PartitionIn
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from broker.share.share_partition import Acquired
from protocol.acl import AclOperation, ResourceType
from protocol.batch import build_batch_from_values
from protocol.clock import ManualClock
from tests.unit.broker.harness import BrokerHarness, running_broker
from tests.unit.broker.helpers import batch
from tests.unit.broker.operations.test_group_operations import (
    NOT_COORDINATOR,
    coordinate_groups,
    give_id,
    join,
    run,
)
from tests.unit.broker.operations.test_share_state_operations import coordinate_shares
from tests.unit.broker.test_acl_rules import grant
from tests.unit.coordinator.group.test_service import settle

TOPIC_ID = uuid.UUID(int=7)
ACCEPT, RELEASE, REJECT = 1, 2, 3
GROUP_ID_NOT_FOUND, FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID = 69, 110, 25
INVALID_RECORD_STATE, SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH = 121, 122, 123
INVALID_REQUEST, GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED = 42, 30, 29
INCONSISTENT_GROUP_PROTOCOL, NON_EMPTY_GROUP = 23, 68

# For test_table.py: a request model per API.
SAMPLES: dict[str, Any] = {
    "ShareGroupHeartbeat": share_group_heartbeat.ShareGroupHeartbeat("s", "m", 0, None, ("t",)),
    "ShareGroupDescribe": share_group_describe.ShareGroupDescribe(("s", "g"), True),
    "ShareFetch": share_fetch.ShareFetch(
        "s", "m", 0, 0, 1, 1 << 20, 10, (PartitionIn(TOPIC_ID, 0),)
    ),
    "ShareAcknowledge": share_acknowledge.ShareAcknowledge(
        "s", "m", 1, (PartitionIn(TOPIC_ID, 0, (AckBatch(0, 0, (ACCEPT,)),)),)
    ),
}


def hb(member: str, epoch: int, topics: tuple[str, ...] | None = None
       ) -> share_group_heartbeat.ShareGroupHeartbeat:  # fmt: skip
    return share_group_heartbeat.ShareGroupHeartbeat("s", member, epoch, None, topics)


async def test_share_group_heartbeat_assigns_a_shared_partition_describe_list_and_leave(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        topic_id = await give_id(b, "t")
        assert (await run(share_group_heartbeat.run, b, hb("m1", 0, ("t",)))).error_code == (
            NOT_COORDINATOR
        )
        await coordinate_groups(b, clock)
        no_topics = await run(share_group_heartbeat.run, b, hb("m1", 0))
        assert no_topics.error_code == INVALID_REQUEST
        one = await run(share_group_heartbeat.run, b, hb("m1", 0, ("t",)))
        two = await run(share_group_heartbeat.run, b, hb("m2", 0, ("t",)))
        shared = (share_group_heartbeat.AssignedTopic(topic_id, (0,), "t"),)
        assert (one.error_code, one.assignment, two.assignment) == (0, shared, shared)
        assert two.member_epoch > one.member_epoch  # m2's join moved the group epoch
        # m1 catches up: its epoch moves; the partition stays shared
        again = await run(share_group_heartbeat.run, b, hb("m1", one.member_epoch))
        assert (again.member_epoch, again.assignment) == (two.member_epoch, shared)
        stale = await run(share_group_heartbeat.run, b, hb("m1", one.member_epoch))
        assert stale.error_code == FENCED_MEMBER_EPOCH
        unknown = await run(share_group_heartbeat.run, b, hb("nobody", 3))
        assert unknown.error_code == UNKNOWN_MEMBER_ID

        await join(b, "g")  # a classic group's id is not a share group's
        classic = share_group_heartbeat.ShareGroupHeartbeat("g", "m9", 0, None, ("t",))
        assert (await run(share_group_heartbeat.run, b, classic)).error_code == GROUP_ID_NOT_FOUND

        asked = share_group_describe.ShareGroupDescribe(("s", "g", "none"))
        described = (await run(share_group_describe.run, b, asked)).groups
        s = described[0]
        assert (s.state, s.assignor_name, [m.member_id for m in s.members]) == (
            "Stable", "simple", ["m1", "m2"])  # fmt: skip
        assert all(m.assignment[0].partitions == (0,) and m.assignment[0].name == "t"
                   for m in s.members)  # fmt: skip
        assert [(d.error_code, d.error_message) for d in described[1:]] == [
            (GROUP_ID_NOT_FOUND, "Group g is not a share group."),
            (GROUP_ID_NOT_FOUND, "Group none not found."),
        ]
        listed = await run(list_groups.run, b, list_groups.ListGroups(types=frozenset({"share"})))
        assert [(g.group_id, g.group_type, g.kafka_state) for g in listed.groups] == [
            ("s", "share", "Stable")
        ]
        left = await run(share_group_heartbeat.run, b, hb("m2", two.member_epoch))
        assert left.error_code == 0
        gone = await run(share_group_heartbeat.run, b, hb("m2", -1))
        assert (gone.error_code, gone.member_epoch) == (0, -1)
        # m1 falls silent: the session timeout (group.share.session.timeout.ms) removes it
        clock.advance(b.ctx.groups.config.share.session_timeout_ms)
        b.ctx.groups.tick()
        after = (await run(share_group_describe.run, b, asked)).groups[0]
        assert (after.state, after.members) == ("Empty", ())


async def produced(b: BrokerHarness, count: int) -> None:
    req = produce.Produce(
        1, 5000, (produce.TopicData("t", (produce.PartitionData(0, batch(count)),)),)
    )
    result = await run(produce.run, b, req)
    assert result.topics[0].partitions[0].error_code == 0


def fetch(member: str, epoch: int, topic_id: uuid.UUID, *acks: AckBatch, max_records: int = 100
          ) -> share_fetch.ShareFetch:  # fmt: skip
    return share_fetch.ShareFetch(
        "s", member, epoch, 0, 1, 1 << 20, max_records, (PartitionIn(topic_id, 0, acks),)
    )


async def test_share_fetch_acquires_acknowledges_and_keeps_sessions(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        topic_id = await give_id(b, "t")
        await produced(b, 5)  # before the first fetch: `latest` would not deliver them
        b.ctx.groups.configs.apply("s", {"share.auto.offset.reset": "earliest"})

        first = await run(share_fetch.run, b, fetch("m1", 0, topic_id, max_records=3))
        (part,) = first.partitions
        assert (first.error_code, part.acquired) == (0, (Acquired(0, 2, 1),))
        assert part.records and first.lock_timeout_ms == 30_000
        other = await run(share_fetch.run, b, fetch("m2", 0, topic_id))
        assert other.partitions[0].acquired == (Acquired(3, 4, 1),)  # the rest, not m1's

        # piggy-backed: accept 0, release 1, reject 2; the released record comes back
        acks = AckBatch(0, 2, (ACCEPT, RELEASE, REJECT))
        second = await run(share_fetch.run, b, fetch("m1", 1, topic_id, acks))
        (part,) = second.partitions
        assert (part.acknowledge_error_code, part.acquired) == (0, (Acquired(1, 1, 2),))
        # m2 may not acknowledge m1's record
        wrong = share_acknowledge.ShareAcknowledge(
            "s", "m2", 1, (PartitionIn(topic_id, 0, (AckBatch(1, 1, (ACCEPT,)),)),)
        )
        assert (await run(share_acknowledge.run, b, wrong)).partitions[0].error_code == (
            INVALID_RECORD_STATE)  # fmt: skip
        # session epochs: a wrong one, none opened, and acknowledging may not open one
        assert (await run(share_fetch.run, b, fetch("m1", 7, topic_id))).error_code == (
            INVALID_SHARE_SESSION_EPOCH)  # fmt: skip
        assert (await run(share_fetch.run, b, fetch("m3", 1, topic_id))).error_code == (
            SHARE_SESSION_NOT_FOUND)  # fmt: skip
        opening = share_acknowledge.ShareAcknowledge("s", "m3", 0, ())
        assert (await run(share_acknowledge.run, b, opening)).error_code == (
            INVALID_SHARE_SESSION_EPOCH)  # fmt: skip
        # the lock expires: m2's records go back, delivered again (count 2)
        clock.advance(30_000)
        expired = await run(share_fetch.run, b, fetch("m1", 2, topic_id))
        assert expired.partitions[0].acquired == (Acquired(1, 1, 3), Acquired(3, 4, 2))
        # closing m1's session (epoch -1) gives back what it holds
        closing = await run(share_fetch.run, b, fetch("m1", -1, topic_id))
        assert closing.error_code == 0
        sp = b.ctx.share.share_partition("s", "t", 0)
        assert sp is not None and sp.start_offset == 1
        assert sorted(o for o, r in sp.records.items() if r.state.name == "AVAILABLE") == [1, 3, 4]


async def test_a_closed_connection_ends_its_share_sessions_and_gives_back_at_once(
    tmp_path: Path,
) -> None:
    """As Kafka's ShareSessionCache on a disconnect: the connection that opened a member's
    share session closes (the member closed its socket or died), the session ends and the
    member's acquired records are Available again at once, their delivery count kept
    (KAFKA-19972); a session opened again on another connection outlives the old one's."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        topic_id = await give_id(b, "t")
        await produced(b, 4)
        b.ctx.groups.configs.apply("s", {"share.auto.offset.reset": "earliest"})
        dying, old, new = Session(), Session(), Session()

        async def fetch_on(conn: Session, member: str, epoch: int, n: int) -> Any:
            return await share_fetch.run(b.ctx, conn, fetch(member, epoch, topic_id,
                                                            max_records=n))  # fmt: skip

        assert (await fetch_on(dying, "m1", 0, 2)).partitions[0].acquired == (Acquired(0, 1, 1),)
        assert (await fetch_on(old, "m2", 0, 1)).partitions[0].acquired == (Acquired(2, 2, 1),)
        assert (await fetch_on(new, "m2", 0, 1)).partitions[0].acquired == (Acquired(3, 3, 1),)
        dying.closed()
        old.closed()  # m2's session is now `new`'s: nothing happens
        sp = b.ctx.share.share_partition("s", "t", 0)
        assert sp is not None
        states = {o: (r.state.name, r.delivery_count) for o, r in sp.records.items()}
        assert states == {0: ("AVAILABLE", 1), 1: ("AVAILABLE", 1), 2: ("ACQUIRED", 1),
                          3: ("ACQUIRED", 1)}  # fmt: skip
        assert (await fetch_on(new, "m2", 1, 5)).partitions[0].acquired == (Acquired(0, 1, 2),)
        assert (await fetch_on(dying, "m1", 1, 5)).error_code == SHARE_SESSION_NOT_FOUND


async def test_share_fetch_and_acknowledge_check_the_group_then_each_topic(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        topic_id = await give_id(b, "t")
        await produced(b, 1)
        b.ctx.groups.configs.apply("s", {"share.auto.offset.reset": "earliest"})
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        denied = await run(share_fetch.run, b, fetch("m1", 0, topic_id))
        assert denied.error_code == GROUP_AUTHORIZATION_FAILED
        ack = share_acknowledge.ShareAcknowledge("s", "m1", 1, (PartitionIn(topic_id, 0),))
        assert (await run(share_acknowledge.run, b, ack)).error_code == GROUP_AUTHORIZATION_FAILED
        grant(authz, AclOperation.READ, ResourceType.GROUP, "s")
        no_topic = await run(share_fetch.run, b, fetch("m1", 0, topic_id))
        assert [(p.error_code, p.acquired) for p in no_topic.partitions] == [
            (TOPIC_AUTHORIZATION_FAILED, ())
        ]
        unknown = await run(share_fetch.run, b, fetch("m1", 1, uuid.UUID(int=99)))
        assert unknown.partitions[0].error_code == 100  # UNKNOWN_TOPIC_ID
        grant(authz, AclOperation.READ, ResourceType.TOPIC, "t")
        allowed = await run(share_fetch.run, b, fetch("m1", 2, topic_id))
        assert allowed.partitions[0].acquired == (Acquired(0, 0, 1),)


async def test_read_committed_share_groups_never_get_aborted_records(tmp_path: Path) -> None:
    """share.isolation.level=read_committed: an aborted transaction's records and the markers
    are passed over; read_uncommitted (another group) gets the aborted records too."""
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        topic_id = await give_id(b, "t")
        p = b.ctx.replicas.leader("t", 0)
        txn = build_batch_from_values([b"x", b"y"], 0, producer_id=9, producer_epoch=0,
                                      base_sequence=0, transactional=True)  # fmt: skip
        p.log.append_as_leader(txn, p.leader_epoch)  # 0-1, aborted at 2
        assert await b.ctx.replicas.append_marker("t", 0, 9, 0, 0, False, 5000) == 0
        await produced(b, 2)  # 3-4
        for group, level in (("s", "read_committed"), ("u", "read_uncommitted")):
            b.ctx.groups.configs.apply(group, {"share.auto.offset.reset": "earliest",
                                               "share.isolation.level": level})  # fmt: skip
        committed = await run(share_fetch.run, b, fetch("m1", 0, topic_id))
        assert committed.partitions[0].acquired == (Acquired(3, 4, 1),)
        uncommitted = dataclasses.replace(fetch("m1", 0, topic_id), group_id="u")
        got = await run(share_fetch.run, b, uncommitted)
        assert got.partitions[0].acquired == (Acquired(0, 1, 1), Acquired(3, 4, 1))


async def test_a_share_group_is_deleted_when_empty_and_its_id_refused_to_other_kinds(
    tmp_path: Path,
) -> None:
    """DeleteGroups of a share group: NON_EMPTY_GROUP while it has members, then deleted (it is
    listed no more); a classic join of its id is INCONSISTENT_GROUP_PROTOCOL and a KIP-848
    heartbeat GROUP_ID_NOT_FOUND ("not a consumer group"), as Kafka's GroupMetadataManager."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        await give_id(b, "t")
        await coordinate_groups(b, clock)
        await coordinate_shares(b)  # DeleteGroups deletes the group's share state there first
        assert (await run(share_group_heartbeat.run, b, hb("m1", 0, ("t",)))).error_code == 0
        classic = join_group.JoinGroup("s", "", 10_000, 10_000, protocol_type="consumer",
                                       protocols=(("range", b""),))  # fmt: skip
        assert (await run(join_group.run, b, classic)).error_code == INCONSISTENT_GROUP_PROTOCOL
        beat = consumer_group_heartbeat.ConsumerGroupHeartbeat(
            "s", "c1", 0, True, rebalance_timeout_ms=10_000, subscribed_topic_names=("t",)
        )
        refused = await run(consumer_group_heartbeat.run, b, beat)
        assert (refused.error_code, refused.error_message) == (
            GROUP_ID_NOT_FOUND, "Group s is not a consumer group.")  # fmt: skip

        async def delete(*groups: str) -> list[tuple[str, int]]:
            got = await run(delete_groups.run, b, delete_groups.DeleteGroups(groups))
            return [(r.group_id, r.error_code) for r in got.results]

        assert await delete("s", "none") == [("s", NON_EMPTY_GROUP), ("none", GROUP_ID_NOT_FOUND)]
        await run(share_group_heartbeat.run, b, hb("m1", -1))
        assert await delete("s") == [("s", 0)]
        listed = await run(list_groups.run, b, list_groups.ListGroups(types=frozenset({"share"})))
        assert not listed.groups


async def test_a_share_group_outlives_its_coordinator_loading_the_offsets_partition_again(
    tmp_path: Path,
) -> None:
    """The share group's records in `__consumer_offsets` (coordinator/group/share_replay.py):
    after the offsets partition is given up and loaded again from its log, the group has the
    same epochs, members and assignments, a member heartbeats on at its epoch, and a deleted
    group stays deleted."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        await give_id(b, "t")
        await coordinate_groups(b, clock)
        await coordinate_shares(b)
        one = await run(share_group_heartbeat.run, b, hb("m1", 0, ("t",)))
        two = await run(share_group_heartbeat.run, b, hb("m2", 0, ("t",)))
        caught_up = await run(share_group_heartbeat.run, b, hb("m1", one.member_epoch))
        asked = share_group_describe.ShareGroupDescribe(("s",))
        (before,) = (await run(share_group_describe.run, b, asked)).groups

        async def reload() -> None:
            groups = b.ctx.groups
            (index,) = groups.owned
            groups.runtime.resign(index)
            groups.on_leadership_change()
            await settle(groups)

        await reload()
        (after,) = (await run(share_group_describe.run, b, asked)).groups
        assert after == before and after.group_epoch == two.member_epoch
        assert [m.member_epoch for m in after.members] == [caught_up.member_epoch] * 2
        again = await run(share_group_heartbeat.run, b, hb("m1", caught_up.member_epoch))
        assert (again.error_code, again.member_epoch, again.assignment) == (
            0, caught_up.member_epoch, None)  # fmt: skip
        for member in ("m1", "m2"):
            assert (await run(share_group_heartbeat.run, b, hb(member, -1))).error_code == 0
        got = await run(delete_groups.run, b, delete_groups.DeleteGroups(("s",)))
        assert [r.error_code for r in got.results] == [0]
        await reload()
        (gone,) = (await run(share_group_describe.run, b, asked)).groups
        assert gone.error_code == GROUP_ID_NOT_FOUND

"""The offset APIs' operations (OffsetCommit, OffsetFetch, OffsetDelete), each tested once,
whichever door serves it, on an in-process broker with the real group coordinator (the harness
and helpers of test_group_operations.py). Golden bytes per door are in test_offsets_codecs.py.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from broker.operations import consumer_group_heartbeat, offset_commit, offset_delete, offset_fetch
from broker.security.authorizer import AclCache, Authorizer
from protocol.acl import AclOperation, ResourceType
from protocol.clock import ManualClock
from protocol.errors import (
    GroupAuthorizationFailedError,
    IllegalGenerationError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from tests.unit.broker.harness import running_broker
from tests.unit.broker.test_acl_rules import grant

from .test_group_operations import NOT_COORDINATOR, beat, coordinate_groups, give_id, join, run

oc = offset_commit
of = offset_fetch
od = offset_delete


def commit(group_id: str, generation: int, member: str, *topics: str, **more: Any) -> Any:
    return oc.OffsetCommit(group_id, generation, member, tuple(
        oc.CommitTopic(t, (oc.CommitPartition(0, 5, "m"), oc.CommitPartition(1, 6)))
        for t in topics), **more)  # fmt: skip


# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "OffsetCommit": commit("g", -1, "", "t", "u"),
    "OffsetFetch": offset_fetch.OffsetFetch(
        (offset_fetch.GroupWanted("g", (("t", (0,)),)), offset_fetch.GroupWanted("h", None))
    ),
    "OffsetDelete": offset_delete.OffsetDelete("g", (("t", (0,)), ("u", (1,)))),
}
CONTEXTS: dict[str, Any] = {}


def codes(result: oc.OffsetCommitResult) -> list[tuple[str, int, int]]:
    return [(t.name, p, code) for t in result.topics for p, code in t.partitions]


async def test_offset_commit_answers_each_partition_in_the_order_asked(tmp_path: Path) -> None:
    """The native door used to answer NOT_COORDINATOR without a coordinator and put refused
    topics last; Kafka's COORDINATOR_NOT_AVAILABLE and the order asked now hold on both."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t", 2)
        await b.lead("u", 2)
        no = await run(oc.run, b, commit("g", -1, "", "t"))
        assert codes(no) == [("t", 0, NOT_COORDINATOR), ("t", 1, NOT_COORDINATOR)]
        await coordinate_groups(b, clock)
        generation, member = await join(b, "g")
        stale = await run(oc.run, b, commit("g", generation + 1, member, "t"))
        assert {code for _, _, code in codes(stale)} == {IllegalGenerationError.code}
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        denied = await run(oc.run, b, commit("g", generation, member, "t"))
        group_auth = GroupAuthorizationFailedError.code
        assert codes(denied) == [("t", 0, group_auth), ("t", 1, group_auth)]
        grant(authz, AclOperation.READ, ResourceType.GROUP, "g")
        grant(authz, AclOperation.READ, ResourceType.TOPIC, "t")
        done = await run(oc.run, b, commit("g", generation, member, "u", "t"))
        topic_auth = TopicAuthorizationFailedError.code
        assert codes(done) == [("u", 0, topic_auth), ("u", 1, topic_auth), ("t", 0, 0),
                               ("t", 1, 0)]  # fmt: skip
        committed = b.ctx.groups.group_view("g")[1]
        assert committed is not None
        assert {tp: o.offset for tp, o in committed.offsets.items()} == {("t", 0): 5, ("t", 1): 6}


async def test_offset_commit_refuses_partitions_this_broker_does_not_know(
    tmp_path: Path,
) -> None:
    """A topic not in the metadata cache, or an index past its partition count, is
    UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers (odradek committed them): the known ones
    are committed. It is decided before the coordinator is asked, so a request of unknown
    partitions only gets it even where no coordinator is; a topic without Read is
    TOPIC_AUTHORIZATION_FAILED whether it exists or not (Read is checked first)."""
    clock = ManualClock()
    unknown = UnknownTopicOrPartitionError.code
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t", 2)
        missing = oc.OffsetCommit("g", -1, "", (
            oc.CommitTopic("missing", (oc.CommitPartition(0, 123),)),))  # fmt: skip
        assert codes(await run(oc.run, b, missing)) == [("missing", 0, unknown)]
        await coordinate_groups(b, clock)
        mixed = oc.OffsetCommit("g", -1, "", (
            oc.CommitTopic("missing", (oc.CommitPartition(0, 123), oc.CommitPartition(1, 4))),
            oc.CommitTopic("t", (oc.CommitPartition(0, 5), oc.CommitPartition(2, 7),
                                 oc.CommitPartition(1, 6))),
        ))  # fmt: skip
        assert codes(await run(oc.run, b, mixed)) == [
            ("missing", 0, unknown), ("missing", 1, unknown),
            ("t", 0, 0), ("t", 2, unknown), ("t", 1, 0)]  # fmt: skip
        committed = b.ctx.groups.group_view("g")[1]
        assert committed is not None
        assert {tp: o.offset for tp, o in committed.offsets.items()} == {("t", 0): 5, ("t", 1): 6}
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.READ, ResourceType.GROUP, "g")
        denied = TopicAuthorizationFailedError.code
        assert codes(await run(oc.run, b, missing)) == [("missing", 0, denied)]


async def test_offset_commit_by_id_refuses_the_group_before_naming_any_topic(
    tmp_path: Path,
) -> None:
    """v10 (topics by id) without Read on the group: every partition is
    GROUP_AUTHORIZATION_FAILED, an unknown id's too (it answered UNKNOWN_TOPIC_ID), as
    Kafka's handleOffsetCommitRequest refuses the group before it names the topics."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t", 2)
        await coordinate_groups(b, clock)
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        nobody = uuid.uuid4()
        by_id = oc.OffsetCommit("g", -1, "", (
            oc.CommitTopic("", (oc.CommitPartition(0, 5), oc.CommitPartition(1, 6))),),
            topic_ids=(nobody,))  # fmt: skip
        denied = await run(oc.run, b, by_id)
        assert (denied.topics, denied.unknown_ids, denied.unknown_ids_code) == (
            (), ((nobody, (0, 1)),), GroupAuthorizationFailedError.code,
        )  # fmt: skip
        grant(authz, AclOperation.READ, ResourceType.GROUP, "g")
        unknown = await run(oc.run, b, by_id)
        assert (unknown.unknown_ids, unknown.unknown_ids_code) == (
            ((nobody, (0, 1)),), UnknownTopicIdError.code,
        )  # fmt: skip


async def test_a_kip848_member_commits_with_its_epoch_only(tmp_path: Path) -> None:
    """Its epoch checked (STALE_MEMBER_EPOCH); a generation that cannot be an epoch (Kafka
    v0-v8) is UNSUPPORTED_VERSION, as Kafka answers, but for an admin's (no member id), which
    the group refuses itself while it has members (UNKNOWN_MEMBER_ID)."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t", 2)
        await give_id(b, "t")
        await coordinate_groups(b, clock)
        member = str(uuid.uuid4())
        joined = await run(consumer_group_heartbeat.run, b,
                           beat(member, 0, subscribed_topic_names=("t",), owned=()))  # fmt: skip
        epoch = joined.member_epoch
        assert joined.error_code == 0 and epoch > 0
        old = await run(oc.run, b, commit("g", epoch, member, "t", generation_is_epoch=False))
        assert {code for _, _, code in codes(old)} == {UnsupportedVersionError.code}
        stale = await run(oc.run, b, commit("g", epoch + 1, member, "t"))
        assert {code for _, _, code in codes(stale)} == {113}  # STALE_MEMBER_EPOCH
        ok = await run(oc.run, b, commit("g", epoch, member, "t"))
        assert {code for _, _, code in codes(ok)} == {0}
        admin = await run(oc.run, b, commit("g", -1, "", "t", generation_is_epoch=False))
        assert {code for _, _, code in codes(admin)} == {25}  # the group's: it has a member


def offsets(g: of.GroupOffsets) -> list[tuple[str, int, int, int]]:
    return [(t.name, p.partition, p.offset, p.error_code) for t in g.topics for p in t.partitions]


async def test_offset_fetch_answers_each_group_and_hides_or_refuses_topics(
    tmp_path: Path,
) -> None:
    """Named topics the principal may not describe come last with TOPIC_AUTHORIZATION_FAILED;
    the all-partitions answer leaves them out. No coordinator: COORDINATOR_NOT_AVAILABLE on
    both doors (the native door said NOT_COORDINATOR)."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t", 2)
        await b.lead("u", 2)
        everything = of.OffsetFetch((of.GroupWanted("g", None),))
        (no,) = (await run(of.run, b, everything)).groups
        assert (no.group_id, no.error_code, no.topics) == ("g", NOT_COORDINATOR, ())
        await coordinate_groups(b, clock)
        assert {c for _, _, c in codes(await run(oc.run, b, commit("g", -1, "", "t", "u")))} == {0}
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.DESCRIBE, ResourceType.GROUP, "g")
        grant(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, "t")
        named = of.GroupWanted("g", (("u", (0,)), ("t", (0, 1, 2))))
        ask = of.OffsetFetch((named, of.GroupWanted("secret", None)))
        g, secret = (await run(of.run, b, ask)).groups
        topic_auth = TopicAuthorizationFailedError.code
        assert (g.group_id, g.error_code) == ("g", 0)
        assert offsets(g) == [("t", 0, 5, 0), ("t", 1, 6, 0), ("t", 2, -1, 0),
                              ("u", 0, -1, topic_auth)]  # fmt: skip
        assert (secret.group_id, secret.error_code, secret.topics) == (
            "secret", GroupAuthorizationFailedError.code, ())  # fmt: skip
        (g,) = (await run(of.run, b, everything)).groups
        assert offsets(g) == [("t", 0, 5, 0), ("t", 1, 6, 0)]  # "u" left out
        assert g.topics[0].partitions[0].metadata == "m"


async def test_offset_fetch_checks_a_kip848_members_epoch(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t", 2)
        await give_id(b, "t")
        await coordinate_groups(b, clock)
        member = str(uuid.uuid4())
        joined = await run(consumer_group_heartbeat.run, b,
                           beat(member, 0, subscribed_topic_names=("t",), owned=()))  # fmt: skip
        epoch = joined.member_epoch
        wanted = (("t", (0,)),)

        async def code(member_id: str | None, member_epoch: int) -> int:
            ask = of.OffsetFetch((of.GroupWanted("g", wanted, member_id, member_epoch),))
            return int((await run(of.run, b, ask)).groups[0].error_code)

        assert await code(member, epoch) == 0
        assert await code(member, epoch - 1) == 113  # STALE_MEMBER_EPOCH
        assert await code("nobody", epoch) == 25  # UNKNOWN_MEMBER_ID
        assert await code(None, -1) == 0  # an admin


async def test_offset_delete_spares_subscribed_topics_and_refuses_what_it_may_not_touch(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t", 2)
        await b.lead("u", 2)
        ask = od.OffsetDelete("g", (("t", (0,)), ("u", (0, 1))))
        assert await run(od.run, b, ask) == od.OffsetDeleteResult(NOT_COORDINATOR)
        await coordinate_groups(b, clock)
        assert (await run(od.run, b, ask)).error_code == 69  # GROUP_ID_NOT_FOUND
        assert {c for _, _, c in codes(await run(oc.run, b, commit("g", -1, "", "t", "u")))} == {0}
        await join(b, "g")  # a native member subscribed to "t"
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.READ, ResourceType.TOPIC, "t")
        denied = await run(od.run, b, ask)
        assert denied == od.OffsetDeleteResult(GroupAuthorizationFailedError.code)
        grant(authz, AclOperation.DELETE, ResourceType.GROUP, "g")
        result = await run(od.run, b, ask)
        assert result == od.OffsetDeleteResult(0, (
            od.TopicDeleted("t", ((0, 86),)),  # GROUP_SUBSCRIBED_TO_TOPIC
            od.TopicDeleted("u", ((0, TopicAuthorizationFailedError.code),
                                  (1, TopicAuthorizationFailedError.code))),
        ))  # fmt: skip
        grant(authz, AclOperation.READ, ResourceType.TOPIC, "u")
        result = await run(od.run, b, ask)
        assert [p for t in result.topics for p in t.partitions] == [(0, 86), (0, 0), (1, 0)]
        left = b.ctx.groups.group_view("g")[1]
        assert left is not None and sorted(left.offsets) == [("t", 0), ("t", 1)]


async def test_offset_delete_refuses_a_group_of_another_protocol_with_members(
    tmp_path: Path,
) -> None:
    """Its members' interests cannot be read: NON_EMPTY_GROUP, as Kafka answers."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        await coordinate_groups(b, clock)
        joined = await b.ctx.groups.join_classic(
            "k", "", "c", "/127.0.0.1", 10_000, 10_000, "connect", [("x", b"")], False
        )
        assert joined.error_code == 0
        result = await run(od.run, b, od.OffsetDelete("k", (("t", (0,)),)))
        assert result == od.OffsetDeleteResult(68)  # NON_EMPTY_GROUP

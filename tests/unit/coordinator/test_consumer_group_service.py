"""KIP-848 through the Kafka door of an in-process broker (tests/unit/broker/harness.py):
ConsumerGroupHeartbeat and ConsumerGroupDescribe, OffsetCommit v9 / OffsetFetch v9 against the
member epoch, ListGroups v5 and DescribeGroups, both kinds of group side by side, conversion of
an empty group either way, members whose metadata cannot migrate refused, and a failover that
replays the records into the coordinator again (every partition given up, then loaded from the
log)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from broker.metadata_cache import MetadataCache
from coordinator.group.consumer_group import (
    FENCED_MEMBER_EPOCH,
    GROUP_ID_NOT_FOUND,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
)
from coordinator.group.records import OFFSETS_TOPIC
from coordinator.runtime.states import PartitionState
from protocol.clock import ManualClock
from protocol.kafka import codec
from protocol.kafka.codec import encode_request, make, nested
from protocol.kafka.versions import (
    CONSUMER_GROUP_DESCRIBE,
    CONSUMER_GROUP_HEARTBEAT,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_FETCH,
)
from tests.unit.broker.harness import BrokerHarness, running_broker

INCONSISTENT_GROUP_PROTOCOL = 23
NON_EMPTY_GROUP = 68
UNSUPPORTED_VERSION = 35
REQUEST_TIMED_OUT = 7
COORDINATOR_LOAD_IN_PROGRESS = 14
NOT_COORDINATOR = 16
T_ID = uuid.UUID("6b7a3b8e-0000-4000-8000-000000000001")


class IdsView:
    """The broker's metadata cache with topic ids (the harness's controller sends none)."""

    def __init__(self, inner: Any, ids: dict[str, uuid.UUID]) -> None:
        self._inner, self._ids = inner, ids

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def topic_id(self, name: str) -> uuid.UUID | None:
        return self._ids.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, i in self._ids.items() if i == topic_id), None)


class Kafka:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.corr = reader, writer, 0

    async def call(self, key: int, version: int, client_id: str = "c", **fields: Any) -> Any:
        self.corr += 1
        body = make(codec.request_class(key, version), **fields)
        self.writer.write(encode_request(key, version, self.corr, body, client_id))
        async with asyncio.timeout(10):
            (size,) = struct.unpack(">i", await self.reader.readexactly(4))
            frame = await self.reader.readexactly(size)
        return codec.decode_response(key, version, frame)[1]


@contextlib.asynccontextmanager
async def broker(tmp_path: Path, clock: ManualClock) -> AsyncIterator[tuple[BrokerHarness, Kafka]]:
    ids = IdsView(MetadataCache(), {"t": T_ID})
    async with running_broker(tmp_path, clock=clock, metadata=ids) as h:  # type: ignore[arg-type]
        await h.lead("t", 4)
        await h.lead(OFFSETS_TOPIC, 1)
        await settle(h)
        reader, writer = await asyncio.open_connection("127.0.0.1", h.kafka_port)
        try:
            yield h, Kafka(reader, writer)
        finally:
            writer.close()


async def settle(h: BrokerHarness) -> None:
    for _ in range(200):
        owned = h.ctx.groups.owned.values()
        if owned and all(o.state is PartitionState.READY for o in owned):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the offsets partition did not load")


def tps(cls: Any, parts: dict[uuid.UUID, list[int]]) -> tuple[Any, ...]:
    tp = nested(cls, "TopicPartitions")
    return tuple(make(tp, topic_id=t, partitions=tuple(ps)) for t, ps in parts.items())


async def heartbeat(k: Kafka, member: str, epoch: int, owned: Any = None, **kw: Any) -> Any:
    cls = codec.request_class(CONSUMER_GROUP_HEARTBEAT, 1)
    fields: dict[str, Any] = {
        "group_id": "g",
        "member_id": member,
        "member_epoch": epoch,
        "topic_partitions": None if owned is None else tps(cls, owned),
    }
    if epoch == 0:
        fields.update(rebalance_timeout=30_000, subscribed_topic_names=("t",), topic_partitions=())
    fields.update(kw)
    return await k.call(CONSUMER_GROUP_HEARTBEAT, 1, **fields)


def assigned(resp: Any) -> dict[uuid.UUID, list[int]]:
    assert resp.assignment is not None
    return {t.topic_id: list(t.partitions) for t in resp.assignment.topic_partitions}


async def commit(k: Kafka, group: str, member: str, epoch: int, offset: int) -> int:
    cls = codec.request_class(OFFSET_COMMIT, 9)
    part = make(
        nested(cls, "OffsetCommitRequestPartition"),
        partition_index=0,
        committed_offset=offset,
        committed_leader_epoch=-1,
        committed_metadata="",
    )
    topic = make(nested(cls, "OffsetCommitRequestTopic"), name="t", partitions=(part,))
    resp = await k.call(
        OFFSET_COMMIT,
        9,
        group_id=group,
        generation_id_or_member_epoch=epoch,
        member_id=member,
        group_instance_id=None,
        topics=(topic,),
    )
    return int(resp.topics[0].partitions[0].error_code)


async def fetch(k: Kafka, member: str | None, epoch: int) -> Any:
    cls = codec.request_class(OFFSET_FETCH, 9)
    topic = make(nested(cls, "OffsetFetchRequestTopics"), name="t", partition_indexes=(0,))
    group = make(
        nested(cls, "OffsetFetchRequestGroup"),
        group_id="g",
        member_id=member,
        member_epoch=epoch,
        topics=(topic,),
    )
    resp = await k.call(OFFSET_FETCH, 9, groups=(group,), require_stable=False)
    return resp.groups[0]


async def test_heartbeat_describe_commit_and_failover(tmp_path: Path) -> None:
    clock = ManualClock()
    async with broker(tmp_path, clock) as (h, k):
        r1 = await heartbeat(k, "m1", 0)
        assert (r1.error_code, r1.member_epoch, r1.member_id) == (0, 1, "m1")
        assert assigned(r1) == {T_ID: [0, 1, 2, 3]}
        assert r1.heartbeat_interval.total_seconds() == 5
        r2 = await heartbeat(k, "m2", 0)
        assert r2.member_epoch == 2 and assigned(r2) == {}
        r1 = await heartbeat(k, "m1", 1, {T_ID: [0, 1, 2, 3]})  # asked to revoke two
        kept = assigned(r1)[T_ID]
        assert len(kept) == 2 and r1.member_epoch == 1
        r1 = await heartbeat(k, "m1", 1, {T_ID: kept})  # revoked: epoch 2
        assert r1.member_epoch == 2
        r2 = await heartbeat(k, "m2", 2)
        assert sorted(assigned(r2)[T_ID] + kept) == [0, 1, 2, 3]

        desc = await k.call(
            CONSUMER_GROUP_DESCRIBE, 1, group_ids=("g", "nope"), include_authorized_operations=False
        )
        g, missing = desc.groups
        assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch) == (
            0,
            "Stable",
            2,
            2,
        )
        assert g.assignor_name == "uniform"
        owners = {m.member_id: m.assignment.topic_partitions[0] for m in g.members}
        assert owners["m1"].topic_name == "t" and sorted(owners["m1"].partitions) == sorted(kept)
        assert missing.error_code == GROUP_ID_NOT_FOUND

        assert await commit(k, "g", "m1", 2, 42) == 0
        assert await commit(k, "g", "m1", 1, 43) == STALE_MEMBER_EPOCH
        assert await commit(k, "g", "ghost", 2, 43) == UNKNOWN_MEMBER_ID
        got = await fetch(k, "m1", 2)
        assert (got.error_code, got.topics[0].partitions[0].committed_offset) == (0, 42)
        assert (await fetch(k, "m1", 1)).error_code == STALE_MEMBER_EPOCH
        assert (await fetch(k, None, -1)).error_code == 0  # an admin

        listed = await k.call(LIST_GROUPS, 5, states_filter=(), types_filter=("Consumer",))
        assert [(x.group_id, x.group_type, x.group_state) for x in listed.groups] == [
            ("g", "consumer", "Stable")
        ]
        dg = await k.call(DESCRIBE_GROUPS, 5, groups=("g",), include_authorized_operations=False)
        assert (dg.groups[0].error_code, dg.groups[0].group_state) == (0, "Dead")

        # failover: the records replayed into a fresh shard: same epochs and assignments
        await h.ctx.groups.shutdown()  # gives every partition up
        h.ctx.groups.on_leadership_change()
        await settle(h)
        assert (await heartbeat(k, "m1", 2)).error_code == 0
        fenced = await heartbeat(k, "m2", 5)
        assert fenced.error_code == FENCED_MEMBER_EPOCH
        desc = await k.call(
            CONSUMER_GROUP_DESCRIBE, 1, group_ids=("g",), include_authorized_operations=False
        )
        again = {
            m.member_id: sorted(m.assignment.topic_partitions[0].partitions)
            for m in desc.groups[0].members
        }
        assert again["m1"] == sorted(kept) and desc.groups[0].group_epoch == 2

        # sessions expire on the manual clock: both fenced, the group is empty
        clock.advance(45_001)
        h.ctx.groups.tick()
        for _ in range(100):
            desc = await k.call(
                CONSUMER_GROUP_DESCRIBE, 1, group_ids=("g",), include_authorized_operations=False
            )
            if desc.groups[0].group_state == "Empty":
                break
            await asyncio.sleep(0.01)
        assert desc.groups[0].group_state == "Empty" and desc.groups[0].members == ()


async def test_both_kinds_and_conversion_on_empty(tmp_path: Path) -> None:
    clock = ManualClock()
    async with broker(tmp_path, clock) as (h, k):
        groups = h.ctx.groups
        # a classic group whose member's metadata is no ConsumerProtocol Subscription: a
        # consumer-protocol member is refused, with why (a good one migrates it online:
        # test_group_migration_service.py)
        join = asyncio.ensure_future(
            groups.join_classic(
                "g", "", "c", "/h", 10_000, 10_000, "consumer", [("range", b"")], False
            )
        )
        answer = await join
        assert answer.error_code == 0
        refused = await heartbeat(k, "m1", 0)
        assert refused.error_code == GROUP_ID_NOT_FOUND
        assert "embedded consumer protocol is malformed" in refused.error_message
        # it leaves: the empty classic group is taken over by the consumer protocol
        assert await groups.leave("g", answer.member_id) == 0
        taken = await heartbeat(k, "m1", 0)
        assert taken.error_code == 0 and assigned(taken) == {T_ID: [0, 1, 2, 3]}
        # a classic member whose metadata does not parse is refused by the consumer group
        classic = await groups.join_classic(
            "g", "", "c", "/h", 10_000, 10_000, "consumer", [("range", b"")], False
        )
        assert classic.error_code == INCONSISTENT_GROUP_PROTOCOL
        assert "not a ConsumerProtocol Subscription" in (classic.error_message or "")
        # it leaves (epoch -1): the empty consumer group is taken over by a classic member
        left = await heartbeat(k, "m1", -1)
        assert (left.error_code, left.member_epoch) == (0, -1)
        back = await groups.join_classic(
            "g", "", "c", "/h", 10_000, 10_000, "consumer", [("range", b"")], False
        )
        assert back.error_code == 0
        listed = await k.call(LIST_GROUPS, 5, states_filter=(), types_filter=())
        assert [(x.group_id, x.group_type) for x in listed.groups] == [("g", "classic")]
        # a consumer group on the same topic beside the classic one
        other = await heartbeat(k, "x1", 0, group_id="g2")
        assert other.error_code == 0 and assigned(other) == {T_ID: [0, 1, 2, 3]}
        listed = await k.call(LIST_GROUPS, 5, states_filter=(), types_filter=())
        assert [(x.group_id, x.group_type) for x in listed.groups] == [
            ("g", "classic"),
            ("g2", "consumer"),
        ]


async def test_delete_a_consumer_group(tmp_path: Path) -> None:
    """DeleteGroups: refused while the consumer group has members (NON_EMPTY_GROUP); once
    empty, its records and offsets are tombstoned, and a failover does not bring it back."""
    clock = ManualClock()
    async with broker(tmp_path, clock) as (h, k):
        groups = h.ctx.groups
        assert (await heartbeat(k, "m1", 0)).error_code == 0
        assert await commit(k, "g", "m1", 1, 5) == 0
        (deleted,) = await groups.delete(["g"])
        assert deleted.error_code == NON_EMPTY_GROUP
        assert (await heartbeat(k, "m1", -1)).error_code == 0
        (deleted,) = await groups.delete(["g"])
        assert deleted.error_code == 0
        await groups.shutdown()  # gives every partition up
        groups.on_leadership_change()
        await settle(h)
        desc = await k.call(
            CONSUMER_GROUP_DESCRIBE, 1, group_ids=("g",), include_authorized_operations=False
        )
        assert desc.groups[0].error_code == GROUP_ID_NOT_FOUND
        assert (await fetch(k, None, -1)).topics[0].partitions[0].committed_offset == -1


async def test_a_failed_append_reloads_the_partition_from_its_log(tmp_path: Path) -> None:
    """A join whose records cannot be replicated (the partition still led here) is answered
    with the error, and the coordinator reloads the partition: memory is again what the log
    holds, so the member the log never recorded is unknown."""
    clock = ManualClock()
    async with broker(tmp_path, clock) as (h, k):
        groups = h.ctx.groups
        assert (await heartbeat(k, "m1", 0)).error_code == 0
        log = groups.runtime.log
        real = log.append_replicated

        async def timing_out(*args: Any, **kwargs: Any) -> int:
            return REQUEST_TIMED_OUT

        log.append_replicated = timing_out  # type: ignore[method-assign]
        try:
            failed = await heartbeat(k, "m2", 0)
        finally:
            log.append_replicated = real  # type: ignore[method-assign]
        assert failed.error_code == REQUEST_TIMED_OUT
        await settle(h)
        for _ in range(100):  # the reload is under way: the client retries
            r = await heartbeat(k, "m2", 2)
            if r.error_code not in (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR):
                break
            await asyncio.sleep(0.01)
        assert r.error_code == UNKNOWN_MEMBER_ID
        assert (await heartbeat(k, "m1", 1)).error_code == 0


async def test_a_refused_kind_is_logged_once_a_minute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """librdkafka retries GROUP_ID_NOT_FOUND without telling its application, so the broker's
    log says why such a consumer does not start: one WARNING a minute per group, not one per
    heartbeat."""
    clock = ManualClock()
    async with broker(tmp_path, clock) as (h, k):
        groups = h.ctx.groups
        answer = await groups.join_classic(
            "g", "", "c", "/h", 120_000, 120_000, "consumer", [("range", b"")], False
        )
        assert answer.error_code == 0
        caplog.set_level(logging.WARNING, logger="odradek")
        for _ in range(5):
            assert (await heartbeat(k, "m1", 0)).error_code == GROUP_ID_NOT_FOUND
        lines = [r for r in caplog.records if "malformed" in r.getMessage()]
        assert len(lines) == 1 and lines[0].levelno == logging.WARNING
        assert "Cannot upgrade the classic group g" in lines[0].getMessage()
        clock.advance(61_000)
        assert (await heartbeat(k, "m1", 0)).error_code == GROUP_ID_NOT_FOUND
        assert len([r for r in caplog.records if "malformed" in r.getMessage()]) == 2

"""Client quotas through a broker's doors (one in-process broker, a manual clock for the rates):
AlterClientQuotas / DescribeClientQuotas on both doors with Kafka's errors, produce and fetch
answers carrying throttle_time_ms by Kafka's formula, the connection muted after the answer and
read again after the throttle, request_percentage on every request, and a removed quota
unthrottling."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from broker.server import Connection
from protocol.api.fetch import INITIAL_EPOCH, NO_SESSION
from protocol.api.produce import ProduceResponse
from protocol.api.quotas import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
    QuotaAlteration,
    QuotaEntityPart,
    QuotaFilterComponent,
    QuotaOp,
)
from protocol.clock import ManualClock
from protocol.errors import InvalidRequestError
from protocol.kafka import codec
from protocol.kafka.codec import make
from protocol.kafka.versions import (
    ALTER_CLIENT_QUOTAS,
    API_VERSIONS,
    DESCRIBE_CLIENT_QUOTAS,
    METADATA,
    PRODUCE,
)
from tests.unit.broker.harness import BrokerHarness, running_broker
from tests.unit.broker.helpers import batch, fetch, produce
from tests.unit.broker.test_kafka_admin_logs import kafka_call
from tests.unit.broker.test_kafka_door import KafkaRaw
from transport.connection import BrokerConnection

CLIENT = "test"  # the harness's connections' client id


def alter(entity: list[tuple[str, str | None]], **ops: float | None) -> AlterClientQuotasRequest:
    parts = [QuotaEntityPart(t, n) for t, n in entity]
    quota_ops = [QuotaOp(k, 0.0 if v is None else v, v is None) for k, v in ops.items()]
    return AlterClientQuotasRequest([QuotaAlteration(parts, quota_ops)])


def kio(api_key: int, version: int, entity_class: str, /, **fields: Any) -> Any:
    """A nested request entity of (api_key, version)."""
    return make(codec.nested(codec.request_class(api_key, version), entity_class), **fields)


def muted_connections(b: BrokerHarness) -> list[Connection]:
    return [c for c in b.server.connections if c.mute is not None and c.mute.muted]


async def wait_until(predicate: Any, timeout_s: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


async def test_native_alter_describe_and_errors(tmp_path: Path) -> None:
    async with running_broker(tmp_path, clock=ManualClock()) as b:
        conn = await b.connect()
        resp = await conn.send(alter([("user", "alice")], producer_byte_rate=1024))
        assert resp.entries[0].error_code == 0, resp
        bad = await conn.send(alter([("user", "alice")], bogus=1))
        assert bad.entries[0].error_code == InvalidRequestError.code
        assert "Invalid configuration key bogus" in bad.entries[0].error_message
        mixed = await conn.send(alter([("ip", "1.2.3.4"), ("user", "a")], producer_byte_rate=1))
        assert mixed.entries[0].error_code == InvalidRequestError.code
        described = await conn.send(
            DescribeClientQuotasRequest([QuotaFilterComponent("user", 0, "alice")], strict=True)
        )
        assert described.error_code == 0
        (entry,) = described.entries
        assert entry.entity == [QuotaEntityPart("user", "alice")]
        assert [(v.key, v.value) for v in entry.values] == [("producer_byte_rate", 1024.0)]
        dup = await conn.send(
            DescribeClientQuotasRequest([QuotaFilterComponent("user", 1)] * 2, strict=False)
        )
        assert dup.error_code == InvalidRequestError.code


async def test_kafka_door_alter_and_describe(tmp_path: Path) -> None:
    async with running_broker(tmp_path, clock=ManualClock()) as b:
        entity = (kio(ALTER_CLIENT_QUOTAS, 1, "EntityData", entity_type="client-id",
                      entity_name=None),)  # fmt: skip
        ops = (kio(ALTER_CLIENT_QUOTAS, 1, "OpData", key="consumer_byte_rate", value=2048.0,
                   remove=False),)  # fmt: skip
        entry = kio(ALTER_CLIENT_QUOTAS, 1, "EntryData", entity=entity, ops=ops)
        resp = await kafka_call(b.kafka_port, ALTER_CLIENT_QUOTAS, 1, entries=(entry,),
                                validate_only=False)  # fmt: skip
        assert resp.entries[0].error_code == 0
        assert resp.entries[0].entity[0].entity_name is None
        bad_ops = (kio(ALTER_CLIENT_QUOTAS, 1, "OpData", key="nope", value=1.0, remove=False),)
        bad = kio(ALTER_CLIENT_QUOTAS, 1, "EntryData", entity=entity, ops=bad_ops)
        resp = await kafka_call(b.kafka_port, ALTER_CLIENT_QUOTAS, 0, entries=(bad,),
                                validate_only=False)  # fmt: skip
        assert resp.entries[0].error_code == InvalidRequestError.code
        component = kio(DESCRIBE_CLIENT_QUOTAS, 1, "ComponentData", entity_type="client-id",
                        match_type=1, match=None)  # fmt: skip
        described = await kafka_call(b.kafka_port, DESCRIBE_CLIENT_QUOTAS, 1,
                                     components=(component,), strict=True)  # fmt: skip
        assert described.error_code == 0
        (found,) = described.entries
        assert [(e.entity_type, e.entity_name) for e in found.entity] == [("client-id", None)]
        assert [(v.key, v.value) for v in found.values] == [("consumer_byte_rate", 2048.0)]
        unknown = kio(DESCRIBE_CLIENT_QUOTAS, 1, "ComponentData", entity_type="group",
                      match_type=2, match=None)  # fmt: skip
        refused = await kafka_call(b.kafka_port, DESCRIBE_CLIENT_QUOTAS, 1,
                                   components=(unknown,), strict=False)  # fmt: skip
        assert refused.error_code == InvalidRequestError.code and refused.entries is None


async def test_produce_throttled_then_muted_then_read_again(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        conn = await b.connect()
        resp = await conn.send(alter([("client-id", CLIENT)], producer_byte_rate=1000))
        assert resp.entries[0].error_code == 0
        first_batch, second_batch = batch(count=1, size=9000), batch(count=1, size=1500)
        first = await conn.send(produce("t", 0, first_batch))
        assert first.throttle_time_ms == 0  # 10 windows of 1000 B/s pad a first burst
        second: ProduceResponse = await conn.send(produce("t", 0, second_batch))
        # O = both batches' bytes / 10 s, over T = 1000 B/s: X = (O - T) / T * 10 s
        observed = (len(first_batch) + len(second_batch)) / 10
        expected = round((observed - 1000) / 1000 * 10_000)
        assert second.throttle_time_ms == expected > 0
        (muted,) = muted_connections(b)
        assert muted.mute is not None and muted.reading_paused
        # the next request is read once the mute ends (a real timer of `expected` ms)
        third = await conn.send(produce("t", 0, batch(count=1, size=10)))
        assert third.topics[0].partitions[0].error_code == 0
        assert third.throttle_time_ms > expected  # still over quota: the rate clock stood still
        # removing the quota unthrottles
        await conn.send(alter([("client-id", CLIENT)], producer_byte_rate=None))
        assert not b.ctx.quotas.produce.enabled
        clock.advance(1)
        fourth = await conn.send(produce("t", 0, batch(count=1, size=100_000)))
        assert fourth.throttle_time_ms == 0


async def test_acks_zero_produce_still_mutes(tmp_path: Path) -> None:
    async with running_broker(tmp_path, clock=ManualClock()) as b:
        await b.lead("t")
        conn = await b.connect()
        await conn.send(alter([("user", "ANONYMOUS")], producer_byte_rate=100))
        conn.send_no_response(produce("t", 0, batch(count=1, size=50_000), acks=0))
        await wait_until(lambda: len(muted_connections(b)) == 1)


async def test_consumer_fetch_throttled_follower_not(tmp_path: Path) -> None:
    async with running_broker(tmp_path, clock=ManualClock()) as b:
        await b.lead("t")
        conn = await b.connect()
        for _ in range(3):
            await conn.send(produce("t", 0, batch(count=1, size=20_000)))
        await conn.send(alter([("client-id", DEFAULT_CLIENT)], consumer_byte_rate=1000))
        resp = await conn.send(fetch("t", {0: 0}))
        sent = fetched_bytes(resp)
        # the fetch asked for at most the quota window's 10 x 1000 B: only the first batch,
        # which comes whole, as any first batch does, and is sent although it is throttled
        # (answered empty, as Kafka would, it would be throttled again at every try)
        assert sent == len(batch(count=1, size=20_000))
        assert resp.throttle_time_ms == round((sent / 10 - 1000) / 1000 * 10_000)
        assert b.ctx.quotas.fetch.sensors[("", CLIENT)].throttle_count == 1


DEFAULT_CLIENT = None  # the <default> client-id entity


def fetched_bytes(resp: Any) -> int:
    return sum(len(p.records) for t in resp.topics for p in t.partitions)


FIRST, SECOND = batch(count=1, size=6000), batch(count=1, size=4000)


@contextlib.asynccontextmanager
async def two_batches_under_a_fetch_quota(
    tmp_path: Path,
) -> AsyncIterator[tuple[BrokerHarness, BrokerConnection, ManualClock]]:
    """FIRST and SECOND in t-0, and consumer_byte_rate=1000 for every client id: the quota
    window's 10 x 1000 B hold the first batch, not both."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        conn = await b.connect()
        for records in (FIRST, SECOND):
            await conn.send(produce("t", 0, records))
        await conn.send(alter([("client-id", DEFAULT_CLIENT)], consumer_byte_rate=1000))
        yield b, conn, clock


async def test_a_throttled_fetch_is_answered_empty_and_its_bytes_taken_back(
    tmp_path: Path,
) -> None:
    async with two_batches_under_a_fetch_quota(tmp_path) as (b, conn, clock):
        first, second = FIRST, SECOND
        one = await conn.send(fetch("t", {0: 0}))
        assert fetched_bytes(one) == len(first) and one.throttle_time_ms == 0
        sensor = b.ctx.quotas.fetch.sensors[("", CLIENT)]
        two = await conn.send(fetch("t", {0: 1}))
        expected = round(((len(first) + len(second)) / 10 - 1000) / 1000 * 10_000)
        assert two.topics == [] and two.throttle_time_ms == expected > 0
        assert sensor.value_total == len(first)  # the second batch's bytes taken back
        assert sensor.throttle_count == 1
        # once the throttle's time has passed, the same fetch brings the second batch
        clock.advance(expected + 100)
        three = await conn.send(fetch("t", {0: 1}))
        assert fetched_bytes(three) == len(second) and three.throttle_time_ms == 0
        assert sensor.value_total == len(first) + len(second)


async def test_a_throttled_fetch_keeps_an_incremental_session_and_begins_none(
    tmp_path: Path,
) -> None:
    """KIP-227 sessions under a throttle: an incremental session is left as it was, so the
    next incremental fetch brings the records; a full fetch answered empty begins no session
    (Kafka's FullFetchContext.getThrottledResponse: INVALID_SESSION_ID)."""
    async with two_batches_under_a_fetch_quota(tmp_path) as (b, conn, clock):
        first, second = FIRST, SECOND
        sessions = b.ctx.replicas.sessions
        begin = replace(fetch("t", {0: 0}), session_epoch=INITIAL_EPOCH)
        one = await conn.send(begin)
        assert fetched_bytes(one) == len(first) and one.session_id != NO_SESSION
        assert len(sessions) == 1
        # the session's next fetch, from offset 1, is throttled: empty, the session kept
        moved = replace(fetch("t", {0: 1}), session_id=one.session_id, session_epoch=1)
        two = await conn.send(moved)
        assert two.topics == [] and two.throttle_time_ms > 0
        assert two.session_id == one.session_id and len(sessions) == 1
        clock.advance(two.throttle_time_ms + 100)
        again = replace(fetch("t", {}), session_id=one.session_id, session_epoch=2)
        three = await conn.send(again)
        assert fetched_bytes(three) == len(second) and three.session_id == one.session_id
        # a full fetch that would begin a second session, throttled: no session begun
        fresh = replace(fetch("t", {0: 0}), session_epoch=INITIAL_EPOCH)
        four = await conn.send(fresh)
        assert four.topics == [] and four.throttle_time_ms > 0
        assert four.session_id == NO_SESSION and len(sessions) == 1


async def test_request_percentage_throttles_any_request_capped_at_a_window(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path, clock=ManualClock()) as b:
        await b.lead("t")
        conn = await b.connect()
        await conn.send(alter([("client-id", CLIENT)], request_percentage=1e-9))
        resp = await conn.send(produce("t", 0, batch(count=1, size=10)))
        # any handler time is far over 1e-9 % of a thread: capped at one window (1 s)
        assert resp.throttle_time_ms == 1000


async def test_kafka_produce_answer_carries_the_throttle(tmp_path: Path) -> None:
    async with running_broker(tmp_path, clock=ManualClock()) as b:
        await b.lead("t")
        conn = await b.connect()
        await conn.send(alter([("client-id", "odradek")], producer_byte_rate=100))
        kafka = await KafkaRaw.connect(b.kafka_port)  # its client id is "odradek"
        produce_cls = codec.request_class(PRODUCE, 9)
        records = batch(count=1, size=5000)
        part = make(codec.nested(produce_cls, "PartitionProduceData"), index=0, records=records)
        topic = make(
            codec.nested(produce_cls, "TopicProduceData"), name="t", partition_data=(part,)
        )
        kafka.send(PRODUCE, 9, 1, transactional_id=None, acks=1, timeout=5000,
                   topic_data=(topic,))  # fmt: skip
        _, resp = await kafka.read(PRODUCE, 9)
        assert resp.throttle_time > datetime.timedelta(0)
        kafka.close()


async def test_kafka_door_any_answer_with_the_field_carries_a_request_throttle(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path, clock=ManualClock()) as b:
        conn = await b.connect()
        await conn.send(alter([("client-id", "odradek")], request_percentage=1e-9))
        resp = await kafka_call(b.kafka_port, METADATA, 9, topics=None,
                                allow_auto_topic_creation=False,
                                include_cluster_authorized_operations=False,
                                include_topic_authorized_operations=False)  # fmt: skip
        assert resp.throttle_time == datetime.timedelta(milliseconds=1000)
        # ApiVersions is exempt, as in Kafka
        versions = await kafka_call(b.kafka_port, API_VERSIONS, 3, client_software_name="t",
                                    client_software_version="1")  # fmt: skip
        assert versions.throttle_time == datetime.timedelta(0)

"""Kafka door fetch sessions by topic id (Fetch v13+, KIP-227 with KIP-516), over a real socket.

A client names a partition once, in the request that adds it to its session; an incremental
request names only what changed. A partition named by an id this broker does not know yet (a
topic it learns of late) is answered UNKNOWN_TOPIC_ID, and must stay in the session: once the
id names a topic, the next incremental answer carries its records, though the request does not
name it again (Kafka resolves its null-named cached partitions so). Until then each answer
says UNKNOWN_TOPIC_ID for it (an error is always answered); forgetting it ends that.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

from protocol.api.controller import LeaderAndIsrRequest, UpdateMetadataRequest
from protocol.kafka import codec
from protocol.kafka.versions import FETCH, PRODUCE
from protocol.topic_ids import encode_topic_id, new_topic_id
from tests.unit.broker.harness import BrokerHarness, running_broker
from tests.unit.broker.helpers import batch
from tests.unit.broker.test_kafka_door import KafkaRaw

UNKNOWN_TOPIC_ID = 100
VERSION = 13


def _nested(key: int, version: int, entity: str, /, **fields: Any) -> Any:
    return codec.make(codec.nested(codec.request_class(key, version), entity), **fields)


async def _create(b: BrokerHarness, name: str, topic_id: uuid.UUID) -> None:
    """Play the controller: this broker leads `name`-0, whose id is `topic_id`."""
    state = dataclasses.replace(b.state(name, 0), topic_id=encode_topic_id(topic_id))
    conn = await b.connect()
    resp = await conn.send(LeaderAndIsrRequest(0, b.controller_epoch, [state], [b.broker_info()]))
    assert all(p.error_code == 0 for p in resp.partitions), resp
    await conn.send(UpdateMetadataRequest(0, b.controller_epoch, [state], [b.broker_info()], []))


async def _produce(c: KafkaRaw, name: str, count: int) -> None:
    data = (_nested(PRODUCE, 9, "TopicProduceData", name=name, partition_data=(
        _nested(PRODUCE, 9, "PartitionProduceData", index=0, records=batch(count)),)),)  # fmt: skip
    c.send(PRODUCE, 9, 1, transactional_id=None, acks=1, timeout=5000, topic_data=data)
    _, resp = await c.read(PRODUCE, 9)
    assert resp.responses[0].partition_responses[0].error_code.value == 0


async def _fetch(
    c: KafkaRaw,
    session: tuple[int, int],
    named: list[uuid.UUID],
    forgotten: list[uuid.UUID] = [],  # noqa: B006 (read only)
) -> Any:
    part = dict(partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=1 << 20)  # fmt: skip
    topics = tuple(
        _nested(FETCH, VERSION, "FetchTopic", topic_id=tid,
                partitions=(_nested(FETCH, VERSION, "FetchPartition", **part),))
        for tid in named
    )  # fmt: skip
    gone = tuple(
        _nested(FETCH, VERSION, "ForgottenTopic", topic_id=tid, partitions=(0,))
        for tid in forgotten
    )
    c.send(FETCH, VERSION, 1, max_wait=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
           session_id=session[0], session_epoch=session[1], topics=topics,
           forgotten_topics_data=gone, rack_id="")  # fmt: skip
    _, resp = await c.read(FETCH, VERSION)
    assert resp.error_code.value == 0, resp
    return resp


def _answered(resp: Any) -> dict[uuid.UUID, tuple[int, int]]:
    """topic id -> (error code, bytes of records) of partition 0."""
    return {
        t.topic_id: (t.partitions[0].error_code.value, len(t.partitions[0].records or b""))
        for t in resp.responses
    }


async def test_a_partition_named_by_an_id_learnt_late_gets_its_records_in_the_session(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as b:
        known, late = new_topic_id(), new_topic_id()
        await _create(b, "known", known)
        c = await KafkaRaw.connect(b.kafka_port)
        try:
            opened = await _fetch(c, (0, 0), [known, late])  # opens a session with both
            session_id = opened.session_id
            assert session_id != 0
            assert _answered(opened) == {known: (0, 0), late: (UNKNOWN_TOPIC_ID, 0)}
            await _create(b, "late", late)  # the broker learns the id
            await _produce(c, "late", 3)
            resolved = await _fetch(c, (session_id, 1), [])  # the client names nothing new
            answer = _answered(resolved)
            assert set(answer) == {late}, answer
            assert answer[late][0] == 0 and answer[late][1] > 0, answer
            quiet = await _fetch(c, (session_id, 2), [])  # at its offset 0 still: records again
            assert _answered(quiet) == answer
        finally:
            c.close()


async def test_an_unknown_id_is_answered_in_each_incremental_answer_until_forgotten(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as b:
        known, unknown = new_topic_id(), new_topic_id()
        await _create(b, "known", known)
        c = await KafkaRaw.connect(b.kafka_port)
        try:
            opened = await _fetch(c, (0, 0), [known, unknown])
            session_id = opened.session_id
            assert _answered(opened)[unknown] == (UNKNOWN_TOPIC_ID, 0)
            again = await _fetch(c, (session_id, 1), [])  # still unknown: an error each time
            assert _answered(again) == {unknown: (UNKNOWN_TOPIC_ID, 0)}
            await _fetch(c, (session_id, 2), [], forgotten=[unknown])
            await _create(b, "unknown", unknown)  # known now, but no longer in the session
            await _produce(c, "unknown", 2)
            later = await _fetch(c, (session_id, 3), [])
            assert _answered(later) == {}
        finally:
            c.close()

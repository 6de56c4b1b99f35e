"""Golden bytes for the record APIs on each door (broker/codecs/{native,kafka}/records.py,
harness in golden.py): a known request frame decodes to the operation's request model, and a
known result encodes to a known response frame. Record batches are opaque to the codecs (they
pass through as they came), so a few bytes stand for one here.

Produce: v0-v2 are advertised but refused before the codec (protocol/kafka/versions.py), so
v3 is the lowest; the native answer and Kafka v3 drop the leader hints, Kafka v12 carries them (the
partition's tagged current_leader, the response's tagged node_endpoints); v13 names topics by
id (the operation names them, and answers each under its id, an unknown one UNKNOWN_TOPIC_ID);
the throttle is written 0 (the server raises it).

Fetch: the native request is the replica manager's own and passes as it is, as does the
answer; the Kafka answer is chunks (protocol/kafka/fetch_response.py; FileSlices between them
when a read is large, none here), joined to compare. v4 names topics, v17 and v18 (whose
request adds only a follower's tagged high watermark, KIP-1166) name them by id:
the operation names them, and answers with the ids, the UNKNOWN_TOPIC_ID partitions of an id
no topic has, and the leader hints (v12+; endpoints v16+).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from broker import apis
from broker.operations import fetch, produce
from protocol.api.fetch import (
    AbortedTransaction,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    FetchTopicResponse,
    ForgottenTopic,
)
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
from protocol.kafka import codec as kafka_codec
from protocol.kafka import versions as v
from protocol.schema import Records

from .golden import TOPIC_ID, Case, kio, many, nested, roundtrip

BATCH = b"batch"
P_REQUEST = produce.Produce(-1, 1500, (
    produce.TopicData("t", (produce.PartitionData(0, BATCH), produce.PartitionData(1, BATCH))),
), "tx")  # fmt: skip
P_RESULT = produce.ProduceResult((
    produce.TopicResult("t", (
        produce.PartitionResult(0, 0, 42, -1, 0),
        produce.PartitionResult(1, 6, -1, -1, -1, "not the leader", (2, 7)),
    )),
), ((2, "h2", 9092, "r1"),))  # fmt: skip


def topic(name: str, *parts: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A TopicProduceData (golden.nested's own first argument is called `name`)."""
    return lambda cls: kafka_codec.make(kafka_codec.nested(cls, "TopicProduceData"), name=name,
                                        partition_data=many(*parts)(cls))  # fmt: skip


def kafka_produce(version: int, **extra: Any) -> Callable[[], Any]:
    parts = many(nested("PartitionProduceData", index=0, records=BATCH),
                 nested("PartitionProduceData", index=1, records=BATCH))  # fmt: skip
    if version >= 13:  # by topic id
        return kio(v.PRODUCE, version, acks=-1, timeout=1500, topic_data=lambda cls: (
            kafka_codec.make(kafka_codec.nested(cls, "TopicProduceData"), topic_id=TOPIC_ID,
                             partition_data=parts(cls)),), **extra)  # fmt: skip
    return kio(v.PRODUCE, version, acks=-1, timeout=1500, topic_data=many(topic("t",
        nested("PartitionProduceData", index=0, records=BATCH),
        nested("PartitionProduceData", index=1, records=BATCH))), **extra)  # fmt: skip


CASES = [
    Case("Produce native", v.PRODUCE, -1,
         lambda: ProduceRequest(-1, 1500, [ProduceTopic("t", [
             ProducePartition(0, Records(BATCH)), ProducePartition(1, Records(BATCH))])], "tx"),
         P_REQUEST, P_RESULT,
         "0000002595000007a16394ffcd05dc9192a174929200c40562617463689201c4056261746368a27478",
         "00000026930700929192a174929600002aff00c0960106ffffffae6e6f7420746865206c656164657200"),
    Case("Produce v3", v.PRODUCE, 3, kafka_produce(3),
         produce.Produce(-1, 1500, P_REQUEST.topics), P_RESULT,
         "0000003e000000030000000700076f64726164656bffffffff000005dc00000001000174000000020000000000000005626174636800000001000000056261746368",
         "0000003f000000070000000100017400000002000000000000000000000000002affffffffffffffff000000010006ffffffffffffffffffffffffffffffff00000000"),
    Case("Produce v12", v.PRODUCE, 12, kafka_produce(12, transactional_id="tx"),
         replace(P_REQUEST, txn_version=2), P_RESULT,
         "000000370000000c0000000700076f64726164656b00037478ffff000005dc02027403000000000662617463680000000001066261746368000000",
         "0000007c000000070002027403000000000000000000000000002affffffffffffffff0000000000000000010000000000010006ffffffffffffffffffffffffffffffffffffffffffffffff010f6e6f7420746865206c6561646572010009000000020000000700000000000001001002000000020368320000238403723100"),
    Case("Produce v13", v.PRODUCE, 13, kafka_produce(13, transactional_id="tx"),
         produce.Produce(-1, 1500, (produce.TopicData("", P_REQUEST.topics[0].partitions),), "tx",
                         txn_version=2, topic_ids=(TOPIC_ID,)),
         produce.ProduceResult(P_RESULT.topics, P_RESULT.leader_endpoints, {"t": TOPIC_ID},
                               ((uuid.UUID(int=1), (3,)),)),
         "000000450000000d0000000700076f64726164656b00037478ffff000005dc020123456789abcdef0123456789abcdef03000000000662617463680000000001066261746368000000",
         "000000bd0000000700030123456789abcdef0123456789abcdef03000000000000000000000000002affffffffffffffff0000000000000000010000000000010006ffffffffffffffffffffffffffffffffffffffffffffffff010f6e6f7420746865206c6561646572010009000000020000000700000000000000000000000000000000000102000000030064ffffffffffffffffffffffffffffffffffffffffffffffff010000000000000001001002000000020368320000238403723100"),
]  # fmt: skip


F_PARTS = [FetchPartition(0, 10, 1 << 20, 5), FetchPartition(1, 0, 1 << 20)]
F_RESPONSE = FetchResponse(0, [FetchTopicResponse("t", [
    FetchPartitionResponse(0, 0, 12, 0, 12, Records(BATCH), 11, [AbortedTransaction(9, 10)]),
    FetchPartitionResponse(1, 6, -1, -1, -1, Records(b""))])], 0, 3)  # fmt: skip
F_RESULT = fetch.FetchResult(
    F_RESPONSE, {"t": TOPIC_ID}, ((None, (4,)),), {("t", 1): (2, 7)}, ((2, "h2", 9092, "r1"),)
)
GONE = uuid.UUID(int=1)


def kafka_fetch(version: int, **extra: Any) -> Callable[[], Any]:
    """A Fetch naming partitions 0 (offset 10, leader epoch 5) and 1 of topic t."""

    def topic(cls: Any) -> Any:
        fcls = kafka_codec.nested(cls, "FetchTopic")
        named = {"topic_id": TOPIC_ID} if version >= 13 else {"topic": "t"}
        return kafka_codec.make(fcls, partitions=(
            nested("FetchPartition", partition=0, fetch_offset=10, partition_max_bytes=1 << 20,
                   current_leader_epoch=5)(cls),
            nested("FetchPartition", partition=1, fetch_offset=0,
                   partition_max_bytes=1 << 20)(cls)), **named)  # fmt: skip

    return kio(v.FETCH, version, replica_id=-1, max_wait=500, min_bytes=1, max_bytes=1 << 24,
               isolation_level=1, topics=lambda cls: (topic(cls),), **extra)  # fmt: skip


CASES += [
    Case("Fetch native", v.FETCH, -1,
         lambda: FetchRequest(2, 500, 1, 1 << 24, [FetchTopic("t", F_PARTS)], 3, 4,
                              [ForgottenTopic("u", [0])]),
         fetch.Fetch(FetchRequest(2, 500, 1, 1 << 24, [FetchTopic("t", F_PARTS)], 3, 4,
                                  [ForgottenTopic("u", [0])])),
         F_RESULT,
         "0000003395010007a1639902cd01f401ce010000009192a1749295000ace0010000005ff950100ce00100000ffff03049192a175910000",
         "0000002893070094009192a174929800000c000cc40562617463680b9192090a980106ffffffc400ffc00003"),
    Case("Fetch v4", v.FETCH, 4, kafka_fetch(4),
         fetch.Fetch(FetchRequest(-1, 500, 1, 1 << 24, [FetchTopic("t", [
             FetchPartition(0, 10, 1 << 20), FetchPartition(1, 0, 1 << 20)])],
             isolation_level=1)),
         fetch.FetchResult(F_RESPONSE),
         "0000004d000100040000000700076f64726164656bffffffff000001f4000000010100000001000000010001740000000200000000000000000000000a0010000000000001000000000000000000100000",
         "0000006400000007000000000000000100017400000002000000000000000000000000000c000000000000000b000000010000000000000009000000000000000a000000056261746368000000010006ffffffffffffffffffffffffffffffffffffffff00000000"),
    Case("Fetch v17", v.FETCH, 17, kafka_fetch(
            17, session_id=3, session_epoch=4, forgotten_topics_data=lambda cls: (
                kafka_codec.make(kafka_codec.nested(cls, "ForgottenTopic"), topic_id=GONE,
                                 partitions=(0,)),)),
         fetch.Fetch(FetchRequest(-1, 500, 1, 1 << 24, [], 3, 4, [], 1),
                     ((TOPIC_ID, tuple(F_PARTS)),), ((GONE, (0,)),), leader_hints=True),
         F_RESULT,
         "00000095000100110000000700076f64726164656b00000001f40000000101000000010000000300000004020123456789abcdef0123456789abcdef030000000000000005000000000000000affffffffffffffffffffffff001000000000000001ffffffff0000000000000000ffffffffffffffffffffffff00100000000002000000000000000000000000000000010200000000000100",
         "000000d7000000070000000000000000000003030123456789abcdef0123456789abcdef03000000000000000000000000000c000000000000000b0000000000000000020000000000000009000000000000000a00ffffffff06626174636800000000010006ffffffffffffffffffffffffffffffffffffffffffffffff00ffffffff01010109000000020000000700000000000000000000000000000000000002000000040064ffffffffffffffffffffffffffffffffffffffffffffffff00ffffffff01000001001002000000020368320000238403723100"),
    Case("Fetch v18", v.FETCH, 18, kafka_fetch(
            18, session_id=3, session_epoch=4, forgotten_topics_data=lambda cls: (
                kafka_codec.make(kafka_codec.nested(cls, "ForgottenTopic"), topic_id=GONE,
                                 partitions=(0,)),)),
         fetch.Fetch(FetchRequest(-1, 500, 1, 1 << 24, [], 3, 4, [], 1),
                     ((TOPIC_ID, tuple(F_PARTS)),), ((GONE, (0,)),), leader_hints=True),
         F_RESULT,
         "00000095000100120000000700076f64726164656b00000001f40000000101000000010000000300000004020123456789abcdef0123456789abcdef030000000000000005000000000000000affffffffffffffffffffffff001000000000000001ffffffff0000000000000000ffffffffffffffffffffffff00100000000002000000000000000000000000000000010200000000000100",
         "000000d7000000070000000000000000000003030123456789abcdef0123456789abcdef03000000000000000000000000000c000000000000000b0000000000000000020000000000000009000000000000000a00ffffffff06626174636800000000010006ffffffffffffffffffffffffffffffffffffffffffffffff00ffffffff01010109000000020000000700000000000000000000000000000000000002000000040064ffffffffffffffffffffffffffffffffffffffffffffffff00ffffffff01000001001002000000020368320000238403723100"),
]  # fmt: skip


def check(case: Case) -> None:
    """golden.check, with a Kafka Fetch answer's chunks joined."""
    if case.key == v.FETCH and case.version >= 0:
        row = apis.BY_KEY[case.key]
        assert row.kafka is not None
        frame = kafka_codec.encode_request(case.key, case.version, 7, case.request())
        request = kafka_codec.decode_request(frame[4:], apis.KAFKA_SERVED, "/127.0.0.1")
        model = row.kafka.codec.decode(request)
        chunks = row.kafka.codec.encode(request, case.result)
        assert all(type(c) is bytes for c in chunks)
        answer = b"".join(chunks)
    else:
        frame, model, answer = roundtrip(case)
    assert frame.hex() == case.request_hex
    assert model == case.model
    assert answer.hex() == case.response_hex


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)


def test_produce_null_records_are_an_empty_batch_and_acks_0_has_no_answer() -> None:
    """A null batch (Kafka's nullable records) reaches the operation as b"", which the append
    refuses as CORRUPT_MESSAGE; a None result (acks=0) is no answer on either door."""
    row = apis.BY_KEY[v.PRODUCE]
    assert row.native is not None and row.kafka is not None
    body = kio(v.PRODUCE, 9, acks=0, timeout=10, topic_data=many(topic("t",
        nested("PartitionProduceData", index=3, records=None))))()  # fmt: skip
    frame = kafka_codec.encode_request(v.PRODUCE, 9, 1, body)
    request = kafka_codec.decode_request(frame[4:], apis.KAFKA_SERVED, "/127.0.0.1")
    assert row.kafka.codec.decode(request).topics[0].partitions[0].records == b""
    assert row.kafka.codec.encode(request, None) is None
    assert row.native.codec.encode(None, None) is None

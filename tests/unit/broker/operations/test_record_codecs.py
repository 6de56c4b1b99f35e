"""Golden bytes for the record APIs on each door (broker/codecs/{native,kafka}/records.py,
harness in golden.py): a known request frame decodes to the operation's request model, and a
known result encodes to a known response frame. Record batches are opaque to the codecs (they
pass through as they came), so a few bytes stand for one here.

Produce: v0-v2 are advertised but refused before the codec (protocol/kafka/versions.py), so
v3 is the lowest; the native answer and Kafka v3 drop the leader hints, Kafka v12 carries them (the
partition's tagged current_leader, the response's tagged node_endpoints); the throttle is
written 0 (the server raises it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from broker import apis
from broker.operations import produce
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
from protocol.kafka import codec as kafka_codec
from protocol.kafka import versions as v
from protocol.schema import Records

from .golden import Case, check, kio, many, nested

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
         P_REQUEST, P_RESULT,
         "000000370000000c0000000700076f64726164656b00037478ffff000005dc02027403000000000662617463680000000001066261746368000000",
         "0000007c000000070002027403000000000000000000000000002affffffffffffffff0000000000000000010000000000010006ffffffffffffffffffffffffffffffffffffffffffffffff010f6e6f7420746865206c6561646572010009000000020000000700000000000001001002000000020368320000238403723100"),
]  # fmt: skip


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

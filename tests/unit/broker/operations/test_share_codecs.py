"""Golden bytes for the share-group APIs on the Kafka door (KIP-932; broker/codecs/kafka/share.py,
harness in golden.py): ShareGroupHeartbeat v1, ShareGroupDescribe v1, ShareFetch v1-v2 and
ShareAcknowledge v1-v2."""

from __future__ import annotations

import pytest

from broker.operations import (
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
)
from broker.operations.share_requests import AckBatch, PartitionIn
from broker.share.share_partition import Acquired
from protocol.batch import build_batch
from protocol.kafka import versions as v

from .golden import TOPIC_ID, Case, check, kio, many, nested

sgh, sgd, sf, sa = share_group_heartbeat, share_group_describe, share_fetch, share_acknowledge
RECORDS = build_batch([(None, b"v", [], 0)] * 2, base_offset=5)
SGD_T = (sgd.AssignedTopic(TOPIC_ID, "t", (0,)),)
SGD_RESULT = sgd.ShareGroupDescribeResult((
    sgd.Described("s", 0, None, "Stable", 3, 3, "simple", (
        sgd.Member("m1", None, 3, "c", "/h", ("t",), SGD_T),)),
    sgd.Described("g", 69, "Group g is not a share group.", "Dead"),
))  # fmt: skip
FETCH_RESULT = sf.ShareFetchResult(0, None, 30000, (
    sf.PartitionOut(TOPIC_ID, 0, 0, None, 0, RECORDS, (Acquired(5, 6, 2),)),
    sf.PartitionOut(TOPIC_ID, 1, 0, None, 121),
))  # fmt: skip
ACK_RESULT = sa.ShareAcknowledgeResult(0, None, 30000, (sa.Acknowledged(TOPIC_ID, 0, 121),))


def fetch_request(version: int, **extra: object) -> object:
    return kio(
        v.SHARE_FETCH, version, group_id="s", member_id="m1", share_session_epoch=1,
        max_wait=500, min_bytes=1, max_bytes=1024, max_records=500, batch_size=500,
        topics=many(nested("FetchTopic", topic_id=TOPIC_ID, partitions=many(
            nested("FetchPartition", partition_index=0, acknowledgement_batches=many(
                nested("AcknowledgementBatch", first_offset=3, last_offset=4,
                       acknowledge_types=(1, 2)))),
            nested("FetchPartition", partition_index=1, acknowledgement_batches=())))),
        forgotten_topics_data=many(nested("ForgottenTopic", topic_id=TOPIC_ID, partitions=(2,))),
        **extra,
    )  # fmt: skip


FETCH_MODEL = dict(
    group_id="s",
    member_id="m1",
    session_epoch=1,
    max_wait_ms=500,
    min_bytes=1,
    max_bytes=1024,
    max_records=500,
    partitions=(PartitionIn(TOPIC_ID, 0, (AckBatch(3, 4, (1, 2)),)), PartitionIn(TOPIC_ID, 1)),
    forgotten=((TOPIC_ID, 2),),
)


def ack_request(version: int, **extra: object) -> object:
    return kio(
        v.SHARE_ACKNOWLEDGE, version, group_id="s", member_id="m1", share_session_epoch=2,
        topics=many(nested("AcknowledgeTopic", topic_id=TOPIC_ID, partitions=many(
            nested("AcknowledgePartition", partition_index=0, acknowledgement_batches=many(
                nested("AcknowledgementBatch", first_offset=5, last_offset=5,
                       acknowledge_types=(3,))))))),
        **extra,
    )  # fmt: skip


ACK_MODEL = sa.ShareAcknowledge("s", "m1", 2, (PartitionIn(TOPIC_ID, 0, (AckBatch(5, 5, (3,)),)),))

CASES = [
    Case("ShareGroupHeartbeat v1", v.SHARE_GROUP_HEARTBEAT, 1,
         kio(v.SHARE_GROUP_HEARTBEAT, 1, group_id="s", member_id="m1", member_epoch=0,
             rack_id=None, subscribed_topic_names=("t",)),
         sgh.ShareGroupHeartbeat("s", "m1", 0, None, ("t",), "odradek", "/127.0.0.1"),
         sgh.ShareGroupHeartbeatResult(0, None, "m1", 1, 5000,
                                       (sgh.AssignedTopic(TOPIC_ID, (0,)),)),
         "00000020004c00010000000700076f64726164656b000273036d31000000000002027400",
         "00000031000000070000000000000000036d31000000010000138801020123456789abcdef0123456789abcdef0200000000000000"),
    Case("ShareGroupDescribe v1", v.SHARE_GROUP_DESCRIBE, 1,
         kio(v.SHARE_GROUP_DESCRIBE, 1, group_ids=("s", "g"), include_authorized_operations=False),
         sgd.ShareGroupDescribe(("s", "g")), SGD_RESULT,
         "00000019004d00010000000700076f64726164656b0003027302670000",
         "0000008d00000007000000000003000000027307537461626c6500000003000000030773696d706c6502036d3100000000030263032f68020274020123456789abcdef0123456789abcdef02740200000000000000800000000000451e47726f75702067206973206e6f7420612073686172652067726f75702e02670544656164ffffffffffffffff0101800000000000"),
    Case("ShareFetch v1", v.SHARE_FETCH, 1, fetch_request(1),
         sf.ShareFetch(**FETCH_MODEL), FETCH_RESULT,
         "0000007a004e00010000000700076f64726164656b000273036d3100000001000001f40000000100000400000001f4000001f4020123456789abcdef0123456789abcdef03000000000200000000000000030000000000000004030102000000000001010000020123456789abcdef0123456789abcdef02000000020000",
         "000000b100000007000000000000000000007530020123456789abcdef0123456789abcdef0300000000000000000000ffffffffffffffff004e000000000000000500000041ffffffff02c48facda00000000000100000000000000000000000000000000ffffffffffffffffffffffffffff000000020e000000010276000e0000020102760002000000000000000500000000000000060002000000000001000000007900ffffffffffffffff00010100000100"),  # type: ignore[arg-type]
    Case("ShareFetch v2", v.SHARE_FETCH, 2, fetch_request(2, is_renew_ack=True),
         sf.ShareFetch(**FETCH_MODEL, is_renew_ack=True), FETCH_RESULT,  # type: ignore[arg-type]
         "0000007c004e00020000000700076f64726164656b000273036d3100000001000001f40000000100000400000001f4000001f40001020123456789abcdef0123456789abcdef03000000000200000000000000030000000000000004030102000000000001010000020123456789abcdef0123456789abcdef02000000020000",
         "000000b100000007000000000000000000007530020123456789abcdef0123456789abcdef0300000000000000000000ffffffffffffffff004e000000000000000500000041ffffffff02c48facda00000000000100000000000000000000000000000000ffffffffffffffffffffffffffff000000020e000000010276000e0000020102760002000000000000000500000000000000060002000000000001000000007900ffffffffffffffff00010100000100"),
    Case("ShareAcknowledge v1", v.SHARE_ACKNOWLEDGE, 1, ack_request(1), ACK_MODEL, ACK_RESULT,
         "00000048004f00010000000700076f64726164656b000273036d3100000002020123456789abcdef0123456789abcdef02000000000200000000000000050000000000000005020300000000",
         "00000032000000070000000000000000020123456789abcdef0123456789abcdef0200000000007900ffffffffffffffff0000000100"),
    Case("ShareAcknowledge v2", v.SHARE_ACKNOWLEDGE, 2, ack_request(2), ACK_MODEL, ACK_RESULT,
         "00000049004f00020000000700076f64726164656b000273036d310000000200020123456789abcdef0123456789abcdef02000000000200000000000000050000000000000005020300000000",
         "0000003600000007000000000000000000007530020123456789abcdef0123456789abcdef0200000000007900ffffffffffffffff0000000100"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)

"""Golden bytes for the share-group APIs on the native door (KIP-932; broker/codecs/native/
share.py, harness in golden.py): the twins of ShareGroupHeartbeat, ShareGroupDescribe,
ShareFetch and ShareAcknowledge that odradek's ShareConsumer speaks; topic ids as a uuid's
text, the heartbeat's assignment naming each topic beside its id."""

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
from protocol.api import share as wire
from protocol.batch import build_batch

from .golden import TOPIC_ID, Case, check

sgh, sgd, sf, sa = share_group_heartbeat, share_group_describe, share_fetch, share_acknowledge
TID = str(TOPIC_ID)
RECORDS = build_batch([(None, b"v", [], 0)], base_offset=5)
ACKS = [wire.SharePartitionRequest(TID, 0, [wire.ShareAckBatch(3, 4, [1, 2])])]

CASES = [
    Case("ShareGroupHeartbeat native", 76, -1,
         lambda: wire.ShareGroupHeartbeatRequest("s", "m1", 0, None, ["t"], "c"),
         sgh.ShareGroupHeartbeat("s", "m1", 0, None, ("t",), "c"),
         sgh.ShareGroupHeartbeatResult(0, None, "m1", 3, 5000,
                                       (sgh.AssignedTopic(TOPIC_ID, (0,), "t"),)),
         "00000013954c0007a16396a173a26d3100c091a174a163",
         "000000399307009600c0a26d3103cd13889193a174d92430313233343536372d383961622d636465662d303132332d3435363738396162636465669100"),
    Case("ShareGroupDescribe native", 77, -1,
         lambda: wire.ShareGroupDescribeRequest(["s", "g"]),
         sgd.ShareGroupDescribe(("s", "g")),
         sgd.ShareGroupDescribeResult((
             sgd.Described("s", 0, None, "Stable", 3, 3, "simple", (
                 sgd.Member("m1", None, 3, "c", "", ("t",),
                            (sgd.AssignedTopic(TOPIC_ID, "t", (0,)),)),)),
             sgd.Described("g", 69, "Group g is not a share group.", "Dead"),
         )),
         "0000000c954d0007a1639192a173a167",
         "0000007e930700919298a17300c0a6537461626c650303a673696d706c659197a26d31c003a163a091a1749193a174d92430313233343536372d383961622d636465662d303132332d343536373839616263646566910098a16745bd47726f75702067206973206e6f7420612073686172652067726f75702ea444656164ffffa090"),
    Case("ShareFetch native", 78, -1,
         lambda: wire.ShareFetchRequest("s", "m1", 1, 500, 1, 1024, 10, ACKS,
                                        [wire.ShareForgotten(TID, 2)]),
         sf.ShareFetch("s", "m1", 1, 500, 1, 1024, 10,
                       (PartitionIn(TOPIC_ID, 0, (AckBatch(3, 4, (1, 2)),)),), ((TOPIC_ID, 2),)),
         sf.ShareFetchResult(0, None, 30000, (
             sf.PartitionOut(TOPIC_ID, 0, 0, None, 0, RECORDS, (Acquired(5, 5, 2),)),)),
         "0000006e954e0007a16399a173a26d3101cd01f401cd04000a9193d92430313233343536372d383961622d636465662d303132332d34353637383961626364656600919303049201029192d92430313233343536372d383961622d636465662d303132332d34353637383961626364656602",
         "000000819307009400c0cd75309197d92430313233343536372d383961622d636465662d303132332d3435363738396162636465660000c000c445000000000000000500000039ffffffff029e41f0b200000000000000000000000000000000000000000000ffffffffffffffffffffffffffff000000010e000000010276009193050502"),
    Case("ShareAcknowledge native", 79, -1,
         lambda: wire.ShareAcknowledgeRequest("s", "m1", -1, ACKS),
         sa.ShareAcknowledge("s", "m1", -1, (PartitionIn(TOPIC_ID, 0, (AckBatch(3, 4, (1, 2)),)),)),
         sa.ShareAcknowledgeResult(0, None, 30000, (sa.Acknowledged(TOPIC_ID, 0, 121),)),
         "0000003d954f0007a16394a173a26d31ff9193d92430313233343536372d383961622d636465662d303132332d3435363738396162636465660091930304920102",
         "000000319307009300c09194d92430313233343536372d383961622d636465662d303132332d3435363738396162636465660079c0"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)


def test_a_topic_id_that_is_not_a_uuid_is_one_line() -> None:
    from broker.codecs.native.share import SHARE_ACKNOWLEDGE
    from protocol import codec as native_codec
    from protocol.errors import InvalidRequestError

    bad = wire.ShareAcknowledgeRequest("s", "m1", 1, [wire.SharePartitionRequest("t", 0, [])])
    request = native_codec.decode_request(native_codec.encode_request(bad, 7, "c")[4:])
    with pytest.raises(InvalidRequestError, match="'t' is not a topic id"):
        SHARE_ACKNOWLEDGE.decode(request)

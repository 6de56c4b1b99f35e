"""Golden bytes for the group and transaction APIs on each door (broker/codecs/, harness in
golden.py): a known request frame decodes to the operation's request model, and a known result
encodes to a known response frame. The last test checks every row of the table, gathering the
CASES of every test_*codecs.py here. The
DescribeTransactions frames pin that a start time of -1 (no open transaction) is written as
-1 ms (ffffffffffffffff), which kio's datetime field would otherwise refuse.
"""

from __future__ import annotations

import pytest

from broker import apis
from broker.operations import (
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    describe_transactions,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    sync_group,
)
from protocol.api import group, txn
from protocol.api.metadata import KAFKA_DOOR
from protocol.kafka import codec as kafka_codec
from protocol.kafka import versions as v

from .golden import TOPIC_ID, Case, check, every_case, kio, many, nested

cgh = consumer_group_heartbeat


CGH_RESULT = cgh.ConsumerGroupHeartbeatResult(
    0, None, "m1", 3, 5000, (cgh.AssignedTopic(TOPIC_ID, "t", (0, 2)),)
)
TX_STATE = describe_transactions.TransactionState(
    0, "tx", "Ongoing", 60000, 1000, 4000, 1, (("t", (0, 1)),)
)
LISTED = list_groups.ListGroupsResult(0, (
    list_groups.Listed("c", "Stable", "Stable", "consumer", "consumer"),
    list_groups.Listed("g", "Ready", "Stable", None, "classic"),
))  # fmt: skip

dg = describe_groups
ASSIGNED = bytes.fromhex("000300000001000174000000020000000000000001ffffffff")  # t: 0, 1 (v3)
DESCRIBED = dg.DescribeGroupsResult((
    dg.Described(0, "k", "Ready", "Stable", 3, "consumer", "range", (
        dg.Member("m1", "c", "/127.0.0.1", "i1", b"meta", None, ASSIGNED),),
        authorized_operations=8),
    dg.Described(0, "n", "Ready", "Stable", 1, None, "range", (
        dg.Member("m2", "c", "", None, b"", (("t", (0, 1)),), None),)),
    dg.Described(0, "c", "Stable", "Stable", 4, "consumer", "uniform", (
        dg.Member("m3", "c", "/h", None, b"", (("t", (0,)),), None, 4, (("t", (0,)),)),),
        "consumer", 4, 4),
    dg.Described(69, "gone", "Dead", "Dead"),
    dg.Described(30, "secret", "", ""),
))  # fmt: skip

fc = find_coordinator
FOUND = fc.FindCoordinatorResult((fc.Coordinator("g", 0, None, 1, "h", 9092),))
FOUND_TWO = fc.FindCoordinatorResult((
    fc.Coordinator("g", 0, None, 1, "h", 9092),
    fc.Coordinator("tx", 53, "no", -1, "", -1),
))  # fmt: skip

cgd = consumer_group_describe
CGD_T = (cgd.AssignedTopic(TOPIC_ID, "t", (0,)),)
CGD_RESULT = cgd.ConsumerGroupDescribeResult((
    cgd.Described("c", 0, None, "Stable", 2, 2, "uniform", (
        cgd.Member("m1", None, "r", 2, "c", "/h", ("t",), None, CGD_T, CGD_T),), 8),
    cgd.Described("g", 69, "Group g is not a consumer group.", "Dead"),
))  # fmt: skip
jg = join_group
LED = jg.JoinGroupResult(0, 2, "m1", None, "consumer", "range", "m1", False, (
    jg.JoinedMember("m1", "i1", b"s1"), jg.JoinedMember("m2", None, b"s2")))  # fmt: skip

CASES = [
    Case("Heartbeat native", 12, -1, lambda: group.HeartbeatRequest("g", 2, "m1", "i1"),
         heartbeat.Heartbeat("g", 2, "m1", "i1"), heartbeat.HeartbeatResult(27),

         "00000010950c0007a16394a16702a26d31a26931",
         "00000005930700911b"),
    Case("Heartbeat v0", v.HEARTBEAT, 0,
         kio(v.HEARTBEAT, 0, group_id="g", generation_id=2, member_id="m1"),
         heartbeat.Heartbeat("g", 2, "m1", None), heartbeat.HeartbeatResult(27),
         "0000001c000c00000000000700076f64726164656b0001670000000200026d31",
         "0000000600000007001b"),
    Case("Heartbeat v4", v.HEARTBEAT, 4,
         kio(v.HEARTBEAT, 4, group_id="g", generation_id=2, member_id="m1",
             group_instance_id="i1"),
         heartbeat.Heartbeat("g", 2, "m1", "i1"), heartbeat.HeartbeatResult(82),
         "0000001f000c00040000000700076f64726164656b00026700000002036d3103693100",
         "0000000c000000070000000000005200"),
    Case("LeaveGroup native", 13, -1, lambda: group.LeaveGroupRequest("g", "", "i1"),
         leave_group.LeaveGroup("g", (leave_group.LeavingMember("", "i1"),)),
         leave_group.LeaveGroupResult(0, (leave_group.MemberLeft("", "i1", 25),)),
         "0000000d950d0007a16393a167a0a26931",
         "000000059307009119"),
    Case("LeaveGroup v0", v.LEAVE_GROUP, 0, kio(v.LEAVE_GROUP, 0, group_id="g", member_id="m1"),
         leave_group.LeaveGroup("g", (leave_group.LeavingMember("m1"),)),
         leave_group.LeaveGroupResult(0, (leave_group.MemberLeft("m1", None, 25),)),
         "00000018000d00000000000700076f64726164656b00016700026d31",
         "00000006000000070019"),
    Case("LeaveGroup v5", v.LEAVE_GROUP, 5,
         kio(v.LEAVE_GROUP, 5, group_id="g", members=many(
             nested("MemberIdentity", member_id="m1", group_instance_id=None, reason="bye"),
             nested("MemberIdentity", member_id="", group_instance_id="i2", reason=None))),
         leave_group.LeaveGroup("g", (leave_group.LeavingMember("m1", None, "bye"),
                                      leave_group.LeavingMember("", "i2", None))),
         leave_group.LeaveGroupResult(0, (leave_group.MemberLeft("m1", None, 0),
                                          leave_group.MemberLeft("", "i2", 25))),
         "00000025000d00050000000700076f64726164656b00026703036d3100046279650001036932000000",
         "0000001b000000070000000000000003036d31000000000103693200190000"),
    Case("ListGroups native", 16, -1, lambda: group.ListGroupsRequest(["Ready"]),
         list_groups.ListGroups(frozenset({"ready"})), LISTED,
         "0000000e95100007a1639191a55265616479",
         "0000004293070092009295a163a6537461626c65a8636f6e73756d6572a6537461626c65a8636f6e73756d657295a167a55265616479c0a6537461626c65a7636c6173736963"),
    Case("ListGroups v0", v.LIST_GROUPS, 0, kio(v.LIST_GROUPS, 0), list_groups.ListGroups(),
         LISTED,
         "00000011001000000000000700076f64726164656b",
         "00000023000000070000000000020001630008636f6e73756d657200016700076f64726164656b"),
    Case("ListGroups v5", v.LIST_GROUPS, 5,
         kio(v.LIST_GROUPS, 5, states_filter=("Stable",), types_filter=("Consumer",)),
         list_groups.ListGroups(frozenset({"stable"}), frozenset({"consumer"})), LISTED,
         "00000025001000050000000700076f64726164656b000207537461626c650209436f6e73756d657200",
         "00000043000000070000000000000003026309636f6e73756d657207537461626c6509636f6e73756d6572000267086f64726164656b07537461626c6508636c61737369630000"),
    Case("DeleteGroups native", 42, -1, lambda: group.DeleteGroupsRequest(["a", "b"]),
         delete_groups.DeleteGroups(("a", "b")),
         delete_groups.DeleteGroupsResult((delete_groups.GroupDeleted("a", 30),
                                           delete_groups.GroupDeleted("b", 0))),
         "0000000c952a0007a1639192a161a162",
         "0000000d930700919292a1611e92a16200"),
    Case("DeleteGroups v2", v.DELETE_GROUPS, 2, kio(v.DELETE_GROUPS, 2, groups_names=("a", "b")),
         delete_groups.DeleteGroups(("a", "b")),
         delete_groups.DeleteGroupsResult((delete_groups.GroupDeleted("a", 30),
                                           delete_groups.GroupDeleted("b", 0))),
         "00000018002a00020000000700076f64726164656b00030261026200",
         "00000015000000070000000000030261001e00026200000000"),
    Case("DeleteGroups v0", v.DELETE_GROUPS, 0, kio(v.DELETE_GROUPS, 0, groups_names=("a",)),
         delete_groups.DeleteGroups(("a",)),
         delete_groups.DeleteGroupsResult((delete_groups.GroupDeleted("a", 30),)),
         "00000018002a00000000000700076f64726164656b00000001000161",
         "00000011000000070000000000000001000161001e"),
    Case("DescribeTransactions native", 65, -1,
         lambda: txn.DescribeTransactionsRequest(["tx", "gone"]),
         describe_transactions.DescribeTransactions(("tx", "gone")),
         describe_transactions.DescribeTransactionsResult(
             (TX_STATE, describe_transactions.TransactionState(105, "gone"))),
         "0000001095410007a1639192a27478a4676f6e65",
         "0000003193070092929800a27478a74f6e676f696e67cdea60cd03e8cd0fa0019192a1749200019869a4676f6e65a000ffffff9000"),
    Case("DescribeTransactions v0", v.DESCRIBE_TRANSACTIONS, 0,
         kio(v.DESCRIBE_TRANSACTIONS, 0, transactional_ids=("tx", "gone")),
         describe_transactions.DescribeTransactions(("tx", "gone")),
         describe_transactions.DescribeTransactionsResult(
             (TX_STATE, describe_transactions.TransactionState(105, "gone"))),
         "0000001c004100000000000700076f64726164656b000303747805676f6e6500",
         "0000005c000000070000000000030000037478084f6e676f696e670000ea6000000000000003e80000000000000fa000010202740300000000000000010000006905676f6e650100000000ffffffffffffffffffffffffffffffffffff010000"),
    Case("ConsumerGroupHeartbeat native", 68, -1,
         lambda: group.ConsumerGroupHeartbeatRequest(
             "g", "m1", 2, None, 30000, ["t"], None, "uniform",
             [group.TopicPartitions("t", [0])], "c"),
         cgh.ConsumerGroupHeartbeat(
             "g", "m1", 2, True, rebalance_timeout_ms=30000, subscribed_topic_names=("t",),
             server_assignor="uniform", owned=(cgh.OwnedTopic(None, "t", (0,)),), client_id="c"),
         CGH_RESULT,
         "0000002595440007a1639aa167a26d3102c0cd753091a174c0a7756e69666f726d9192a1749100a163",
         "000000149307009600c0a26d3103cd13889192a174920002"),
    Case("ConsumerGroupHeartbeat v1", v.CONSUMER_GROUP_HEARTBEAT, 1,
         kio(v.CONSUMER_GROUP_HEARTBEAT, 1, group_id="g", member_id="m1", member_epoch=2,
             instance_id=None, rack_id="r", rebalance_timeout=30000,
             subscribed_topic_names=("t",), subscribed_topic_regex=None,
             server_assignor="uniform", topic_partitions=many(
                 nested("TopicPartitions", topic_id=TOPIC_ID, partitions=(0,)))),
         cgh.ConsumerGroupHeartbeat(
             "g", "m1", 2, True, rack_id="r", rebalance_timeout_ms=30000,
             subscribed_topic_names=("t",), server_assignor="uniform",
             owned=(cgh.OwnedTopic(TOPIC_ID, None, (0,)),), client_id="odradek",
             client_host="/127.0.0.1"),
         CGH_RESULT,
         "00000046004400010000000700076f64726164656b000267036d3100000002000272000075300202740008756e69666f726d020123456789abcdef0123456789abcdef02000000000000",
         "00000035000000070000000000000000036d31000000030000138801020123456789abcdef0123456789abcdef030000000000000002000000"),
    Case("ConsumerGroupHeartbeat v0", v.CONSUMER_GROUP_HEARTBEAT, 0,
         kio(v.CONSUMER_GROUP_HEARTBEAT, 0, group_id="g", member_id="", member_epoch=0,
             instance_id=None, rack_id=None, rebalance_timeout=30000,
             subscribed_topic_names=("t",), server_assignor=None, topic_partitions=()),
         cgh.ConsumerGroupHeartbeat(
             "g", "", 0, False, rebalance_timeout_ms=30000, subscribed_topic_names=("t",),
             owned=(), client_id="odradek", client_host="/127.0.0.1"),
         cgh.ConsumerGroupHeartbeatResult(42, "MemberId can't be empty."),
         "00000025004400000000000700076f64726164656b0002670100000000000000007530020274000100",
         "0000002f000000070000000000002a194d656d62657249642063616e277420626520656d7074792e00ffffffff00000000ff00"),
    Case("DescribeGroups native", 15, -1,
         lambda: group.DescribeGroupsRequest(["k", "n", "c", "gone", "secret"]),
         dg.DescribeGroups(("k", "n", "c", "gone", "secret")), DESCRIBED,
         "0000001a950f0007a1639195a16ba16ea163a4676f6e65a6736563726574",
         "0000010293070091959b00a16ba5526561647903a572616e67659197a26d31a1639192a174920001aa2f3132372e302e302e31a26931ffc0a8636f6e73756d6572a6537461626c65a7636c6173736963ffff9b00a16ea5526561647901a572616e67659197a26d32a1639192a174920001a0c0ffc0c0a6537461626c65a7636c6173736963ffff9b00a163a6537461626c6504a7756e69666f726d9197a26d33a1639192a1749100a22f68c0049192a1749100a8636f6e73756d6572a6537461626c65a8636f6e73756d657204049b45a4676f6e65a444656164ffa090c0a444656164a7636c6173736963ffff9b1ea6736563726574a0ffa090c0a0a7636c6173736963ffff"),
    Case("DescribeGroups v0", v.DESCRIBE_GROUPS, 0,
         kio(v.DESCRIBE_GROUPS, 0, groups=("k", "n", "c", "gone", "secret")),
         dg.DescribeGroups(("k", "n", "c", "gone", "secret")), DESCRIBED,
         "0000002c000f00000000000700076f64726164656b0000000500016b00016e0001630004676f6e650006736563726574",
         "000000ea0000000700000005000000016b0006537461626c650008636f6e73756d6572000572616e67650000000100026d31000163000a2f3132372e302e302e31000000046d65746100000019000300000001000174000000020000000000000001ffffffff000000016e0006537461626c6500076f64726164656b000572616e67650000000100026d3200016300000000000000000019000300000001000174000000020000000000000001ffffffff0000000163000444656164000000000000000000000004676f6e650004446561640000000000000000001e000673656372657400000000000000000000"),
    Case("DescribeGroups v5", v.DESCRIBE_GROUPS, 5,
         kio(v.DESCRIBE_GROUPS, 5, groups=("k", "n", "c", "gone", "secret"),
             include_authorized_operations=True),
         dg.DescribeGroups(("k", "n", "c", "gone", "secret"), True), DESCRIBED,
         "00000027000f00050000000700076f64726164656b0006026b026e026305676f6e65077365637265740100",
         "000000d7000000070000000000060000026b07537461626c6509636f6e73756d65720672616e676502036d3103693102630b2f3132372e302e302e31056d6574611a000300000001000174000000020000000000000001ffffffff0000000008000000026e07537461626c65086f64726164656b0672616e676502036d3200026301011a000300000001000174000000020000000000000001ffffffff0080000000000000026305446561640101018000000000000005676f6e6505446561640101018000000000001e0773656372657401010101800000000000"),
    # v6 (KIP-1043): GROUP_ID_NOT_FOUND, Dead and Kafka's message for no such classic group
    Case("DescribeGroups v6", v.DESCRIBE_GROUPS, 6,
         kio(v.DESCRIBE_GROUPS, 6, groups=("k", "n", "c", "gone", "secret"),
             include_authorized_operations=True),
         dg.DescribeGroups(("k", "n", "c", "gone", "secret"), True), DESCRIBED,
         "00000027000f00060000000700076f64726164656b0006026b026e026305676f6e65077365637265740100",
         "0000011000000007000000000006000000026b07537461626c6509636f6e73756d65720672616e676502036d3103693102630b2f3132372e302e302e31056d6574611a000300000001000174000000020000000000000001ffffffff000000000800000000026e07537461626c65086f64726164656b0672616e676502036d3200026301011a000300000001000174000000020000000000000001ffffffff00800000000000452047726f75702063206973206e6f74206120636c61737369632067726f75702e02630544656164010101800000000000451647726f757020676f6e65206e6f7420666f756e642e05676f6e6505446561640101018000000000001e000773656372657401010101800000000000"),
    Case("SyncGroup v0", v.SYNC_GROUP, 0,
         kio(v.SYNC_GROUP, 0, group_id="g", generation_id=2, member_id="m1", assignments=many(
             nested("SyncGroupRequestAssignment", member_id="m1", assignment=b"a1"))),
         sync_group.SyncGroup("g", 2, "m1", (("m1", b"a1"),)),
         sync_group.SyncGroupResult(0, b"a1", "consumer", "range"),
         "0000002a000e00000000000700076f64726164656b0001670000000200026d310000000100026d31000000026131",
         "0000000c000000070000000000026131"),
    Case("SyncGroup v5", v.SYNC_GROUP, 5,
         kio(v.SYNC_GROUP, 5, group_id="g", generation_id=2, member_id="m2",
             group_instance_id="i2", protocol_type="consumer", protocol_name="range",
             assignments=()),
         sync_group.SyncGroup("g", 2, "m2", (), "consumer", "range", "i2"),
         sync_group.SyncGroupResult(82),
         "0000002f000e00050000000700076f64726164656b00026700000002036d3203693209636f6e73756d65720672616e67650100",
         "0000000f000000070000000000005200000100"),
    Case("FindCoordinator native", 10, -1, lambda: group.FindCoordinatorRequest("g", 1),
         fc.FindCoordinator(("g",), 1), FOUND,
         "0000000a950a0007a16392a16701",
         "0000000c9307009500c001a168cd2384"),
    Case("FindCoordinator v0", v.FIND_COORDINATOR, 0, kio(v.FIND_COORDINATOR, 0, key="g"),
         fc.FindCoordinator(("g",), 0, KAFKA_DOOR), FOUND,
         "00000014000a00000000000700076f64726164656b000167",
         "000000110000000700000000000100016800002384"),
    Case("FindCoordinator v4", v.FIND_COORDINATOR, 4,
         kio(v.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=("g", "tx")),
         fc.FindCoordinator(("g", "tx"), 1, KAFKA_DOOR), FOUND_TWO,
         "0000001a000a00040000000700076f64726164656b000103026703747800",
         "0000002d0000000700000000000302670000000102680000238400000000037478ffffffff01ffffffff0035036e6f0000"),
    Case("FindCoordinator v6", v.FIND_COORDINATOR, 6,
         kio(v.FIND_COORDINATOR, 6, key_type=1, coordinator_keys=("g", "tx")),
         fc.FindCoordinator(("g", "tx"), 1, KAFKA_DOOR), FOUND_TWO,
         "0000001a000a00060000000700076f64726164656b000103026703747800",
         "0000002d0000000700000000000302670000000102680000238400000000037478ffffffff01ffffffff0035036e6f0000"),
    Case("JoinGroup native", 11, -1,
         lambda: group.JoinGroupRequest("g", 10000, ["t"], "", "range", 30000, "c", "t.*", "i1"),
         jg.JoinGroup("g", "", 10000, 30000, "c", group_instance_id="i1",
                      native=jg.NativeSubscription(("t",), "t.*", "range")),
         jg.JoinGroupResult(0, 2, "m1", partitions_to_own=(("t", (0, 1)),)),
         "00000022950b0007a16399a167cd271091a174a0a572616e6765cd7530a163a3742e2aa26931",
         "00000011930700950002a26d319192a174920001c0"),
    Case("JoinGroup v0", v.JOIN_GROUP, 0,
         kio(v.JOIN_GROUP, 0, group_id="g", session_timeout=10000, member_id="",
             protocol_type="consumer", protocols=many(
                 nested("JoinGroupRequestProtocol", name="range", metadata=b"s1"))),
         jg.JoinGroup("g", "", 10000, 10000, "odradek", "/127.0.0.1", None, "consumer",
                      (("range", b"s1"),)),
         LED,
         "00000035000b00000000000700076f64726164656b0001670000271000000008636f6e73756d657200000001000572616e6765000000027331",
         "0000003100000007000000000002000572616e676500026d3100026d310000000200026d3100000002733100026d32000000027332"),
    Case("JoinGroup v9", v.JOIN_GROUP, 9,
         kio(v.JOIN_GROUP, 9, group_id="g", session_timeout=10000, rebalance_timeout=30000,
             member_id="m1", group_instance_id="i1", protocol_type="consumer",
             reason="hi", protocols=many(
                 nested("JoinGroupRequestProtocol", name="range", metadata=b"s1"))),
         jg.JoinGroup("g", "m1", 10000, 30000, "odradek", "/127.0.0.1", "i1", "consumer",
                      (("range", b"s1"),), require_known_member_id=True,
                      skip_assignment_allowed=True, reason="hi"),
         LED,
         "0000003a000b00090000000700076f64726164656b0002670000271000007530036d3103693109636f6e73756d6572020672616e67650373310003686900",
         "0000003900000007000000000000000000000209636f6e73756d65720672616e6765036d3100036d3103036d3103693103733100036d32000373320000"),
    Case("ConsumerGroupDescribe v0", v.CONSUMER_GROUP_DESCRIBE, 0,
         kio(v.CONSUMER_GROUP_DESCRIBE, 0, group_ids=("c", "g"),
             include_authorized_operations=True),
         cgd.ConsumerGroupDescribe(("c", "g"), True), CGD_RESULT,
         "00000019004500000000000700076f64726164656b0003026302670100",
         "000000ae00000007000000000003000000026307537461626c65000000020000000208756e69666f726d02036d31000272000000020263032f6802027400020123456789abcdef0123456789abcdef027402000000000000020123456789abcdef0123456789abcdef02740200000000000000000000080000452147726f75702067206973206e6f74206120636f6e73756d65722067726f75702e02670544656164ffffffffffffffff0101800000000000"),
    Case("ConsumerGroupDescribe v1", v.CONSUMER_GROUP_DESCRIBE, 1,
         kio(v.CONSUMER_GROUP_DESCRIBE, 1, group_ids=("c",),
             include_authorized_operations=False),
         cgd.ConsumerGroupDescribe(("c",)), cgd.ConsumerGroupDescribeResult(CGD_RESULT.groups[:1]),
         "00000017004500010000000700076f64726164656b000202630000",
         "0000007600000007000000000002000000026307537461626c65000000020000000208756e69666f726d02036d31000272000000020263032f6802027400020123456789abcdef0123456789abcdef027402000000000000020123456789abcdef0123456789abcdef0274020000000000000100000000080000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)


def decodable(key: int, version: int) -> bool:
    try:
        kafka_codec.request_class(key, version)
    except Exception:  # kio has no schema for it: the door refuses it before any codec
        return False
    return True


def test_every_row_has_golden_bytes_on_each_door_and_kafka_version_bounds() -> None:
    covered = {(c.key, c.version) for c in every_case()}
    for row in apis.APIS:
        if row.native is not None:
            assert (row.key, -1) in covered, f"{row.name}: no native golden bytes"
        if row.kafka is not None:
            lo, hi = row.kafka.versions
            while not decodable(row.key, lo):  # advertised, refused (Produce v0-v2)
                lo += 1
            assert {(row.key, lo), (row.key, hi)} <= covered, f"{row.name}: Kafka v{lo}/v{hi}"

"""The group coordinator's operations (broker/operations/), each tested once, whichever door
serves it: called directly with a `Session`, on an in-process broker (tests/unit/broker/
harness.py) with the real group and transaction coordinators and, where a test says so, a real
Authorizer. The doors' codecs are tested apart (test_codecs.py); the ACL table's checks for
every API in tests/unit/broker/test_acl_rules.py.
"""

from __future__ import annotations

import dataclasses
import inspect
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

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
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from coordinator.transaction.txn import InitAnswer
from protocol.acl import AclOperation, ResourceType
from protocol.api.controller import UpdateMetadataRequest
from protocol.api.group import (
    TRANSACTION_KEY_TYPE,
    FindCoordinatorResponse,
    JoinGroupRequest,
    ListedGroup,
)
from protocol.api.metadata import KAFKA_DOOR, NATIVE_DOOR, BrokerInfo, Endpoint
from protocol.clock import ManualClock
from protocol.errors import (
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    IllegalGenerationError,
    InvalidGroupIdError,
    InvalidRequestError,
    NotCoordinatorError,
    TransactionalIdAuthorizationFailedError,
    UnknownMemberIdError,
)
from protocol.principal import KafkaPrincipal
from protocol.topic_ids import encode_topic_id, new_topic_id
from tests.unit.broker.harness import BROKER_ID, BrokerHarness, running_broker
from tests.unit.broker.test_acl_rules import grant
from tests.unit.broker.test_txn_verification import coordinator_for as txn_coordinator_for
from tests.unit.coordinator.group.test_service import settle

ALICE = KafkaPrincipal.user("alice")
SESSION = Session(principal=ALICE, peer_host="127.0.0.1", peer_port=5555)
NO_COORDINATOR = CoordinatorNotAvailableError.code
NOT_COORDINATOR = NotCoordinatorError.code  # what a broker not (yet) coordinating a key answers

# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "Heartbeat": heartbeat.Heartbeat("g", 1, "m"),
    "LeaveGroup": leave_group.LeaveGroup("g", (leave_group.LeavingMember("m"),)),
    "DeleteGroups": delete_groups.DeleteGroups(("g", "h")),
    "ListGroups": list_groups.ListGroups(),
    "SyncGroup": sync_group.SyncGroup("g", 1, "m", (("m", b"a"),)),
    "DescribeGroups": describe_groups.DescribeGroups(("g", "h"), True),
    "DescribeTransactions": describe_transactions.DescribeTransactions(("tx",)),
    "ConsumerGroupHeartbeat": consumer_group_heartbeat.ConsumerGroupHeartbeat(
        "g", str(uuid.uuid4()), 0, True, subscribed_topic_names=("t", "u"), owned=()
    ),
    "FindCoordinator": find_coordinator.FindCoordinator(("g", "h")),
    "ConsumerGroupDescribe": consumer_group_describe.ConsumerGroupDescribe(("g", "h"), True),
    "JoinGroup": join_group.JoinGroup(
        "g", "", 10_000, 10_000, protocol_type="consumer", protocols=(("range", b""),)
    ),
}
# ListGroups asks only when there are groups to show: a coordinator with one
LISTING = SimpleNamespace(
    list_groups=lambda states: [ListedGroup("g", "Ready", None, "Stable")],
    share=SimpleNamespace(groups=lambda: []),
)
CONTEXTS: dict[str, Any] = {"ListGroups": {"groups": LISTING}}


async def run(operation: Any, b: BrokerHarness, request: Any) -> Any:
    result = operation(b.ctx, SESSION, request)
    return await result if inspect.isawaitable(result) else result


async def coordinate_groups(b: BrokerHarness, clock: ManualClock) -> None:
    groups = b.ctx.groups
    await b.lead(OFFSETS_TOPIC, 1)
    await settle(groups)


async def join(b: BrokerHarness, group: str) -> tuple[int, str]:
    conn = await b.connect()
    joined = await conn.send(JoinGroupRequest(group, 10_000, ["t"], "", "range", 10_000, "c"))
    assert joined.error_code == 0, joined
    return joined.generation_id, joined.member_id


async def test_heartbeat_keeps_a_member_and_tells_the_others_what_they_are(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        beat = heartbeat.Heartbeat("g", 1, "m")
        assert (await run(heartbeat.run, b, beat)).error_code == NOT_COORDINATOR
        await coordinate_groups(b, clock)
        generation, member = await join(b, "g")
        ok = await run(heartbeat.run, b, heartbeat.Heartbeat("g", generation, member))
        assert ok == heartbeat.HeartbeatResult(0)
        old = await run(heartbeat.run, b, heartbeat.Heartbeat("g", generation + 1, member))
        assert old.error_code == IllegalGenerationError.code
        stranger = await run(heartbeat.run, b, heartbeat.Heartbeat("g", generation, "nobody"))
        assert stranger.error_code == UnknownMemberIdError.code


async def test_leave_group_answers_each_member_and_refuses_the_whole_request_unauthorized(
    tmp_path: Path,
) -> None:
    """Refusals of the whole request (no coordinator, not this group's coordinator, no Read)
    are the top-level code with no member listed, as Kafka answers them (members each had
    COORDINATOR_NOT_AVAILABLE before)."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        members = (leave_group.LeavingMember("m"), leave_group.LeavingMember("n", reason="bye"))
        result = await run(leave_group.run, b, leave_group.LeaveGroup("g", members))
        assert result == leave_group.LeaveGroupResult(NOT_COORDINATOR, ())
        await coordinate_groups(b, clock)
        unnamed = await run(leave_group.run, b, leave_group.LeaveGroup("", members))
        assert unnamed == leave_group.LeaveGroupResult(InvalidGroupIdError.code, ())
        _, member = await join(b, "g")
        members = (leave_group.LeavingMember(member), leave_group.LeavingMember("nobody"))
        b.install_authorizer(Authorizer(AclCache()))
        denied = await run(leave_group.run, b, leave_group.LeaveGroup("g", members))
        assert denied == leave_group.LeaveGroupResult(GroupAuthorizationFailedError.code, ())
        grant(b.ctx.authorizer, AclOperation.READ, ResourceType.GROUP, "g")
        result = await run(leave_group.run, b, leave_group.LeaveGroup("g", members))
        assert result.error_code == 0
        assert [(m.member_id, m.error_code) for m in result.members] == [
            (member, 0), ("nobody", UnknownMemberIdError.code)]  # fmt: skip


async def test_delete_groups_answers_in_the_order_asked(tmp_path: Path) -> None:
    """Each group where it was asked, refused ones included (the Kafka door used to put the
    refused ones last)."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        ask = delete_groups.DeleteGroups(("secret", "g"))
        result = await run(delete_groups.run, b, ask)
        assert [(r.group_id, r.error_code) for r in result.results] == [
            ("secret", NOT_COORDINATOR), ("g", NOT_COORDINATOR)]  # fmt: skip
        await coordinate_groups(b, clock)
        _, member = await join(b, "g")
        await run(
            leave_group.run, b, leave_group.LeaveGroup("g", (leave_group.LeavingMember(member),))
        )
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.DELETE, ResourceType.GROUP, "g")
        grant(authz, AclOperation.DELETE, ResourceType.GROUP, "missing")
        ask = delete_groups.DeleteGroups(("secret", "g", "missing"))
        result = await run(delete_groups.run, b, ask)
        assert [(r.group_id, r.error_code) for r in result.results] == [
            ("secret", GroupAuthorizationFailedError.code), ("g", 0),
            ("missing", GroupIdNotFoundError.code)]  # fmt: skip


async def test_describe_transactions_in_the_order_asked_without_hidden_topics(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        await b.lead("u")
        ask = describe_transactions.DescribeTransactions(("tx",))
        result = await run(describe_transactions.run, b, ask)
        assert result.transaction_states == (
            describe_transactions.TransactionState(NOT_COORDINATOR, "tx"),
        )
        txns = await txn_coordinator_for(b)
        answer = await txns.init_producer_id("tx", 60_000, -1, -1)
        assert isinstance(answer, InitAnswer) and answer.error == "NONE"
        pid, epoch = answer.producer_id, answer.producer_epoch
        assert await txns.add_partitions("tx", pid, epoch, [("t", 0), ("u", 0)]) == {
            ("t", 0): "NONE", ("u", 0): "NONE"}  # fmt: skip
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        for name in ("tx", "unknown"):
            grant(authz, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, name)
        grant(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, "t")
        ask = describe_transactions.DescribeTransactions(("secret", "tx", "unknown"))
        secret, tx, unknown = (await run(describe_transactions.run, b, ask)).transaction_states
        assert secret.error_code == TransactionalIdAuthorizationFailedError.code
        assert (tx.error_code, tx.transactional_id, tx.state) == (0, "tx", "Ongoing")
        assert (tx.producer_id, tx.producer_epoch, tx.timeout_ms) == (pid, epoch, 60_000)
        assert tx.topics == (("t", (0,)),)  # "u" may not be described: left out
        assert unknown.error_code == 105  # TRANSACTIONAL_ID_NOT_FOUND


async def give_id(b: BrokerHarness, topic: str) -> uuid.UUID:
    """Give a one-partition topic an id, as the controller announces it (KIP-516)."""
    topic_id = new_topic_id()
    state = dataclasses.replace(b.state(topic, 0), topic_id=encode_topic_id(topic_id))
    conn = await b.connect()
    req = UpdateMetadataRequest(0, b.controller_epoch, [state], [b.broker_info()], [])
    assert (await conn.send(req)).error_code == 0
    return topic_id


def beat(
    member_id: str, epoch: int, **more: Any
) -> consumer_group_heartbeat.ConsumerGroupHeartbeat:
    return consumer_group_heartbeat.ConsumerGroupHeartbeat(
        "g", member_id, epoch, member_id_required=more.pop("required", True),
        rebalance_timeout_ms=30_000, **more,
    )  # fmt: skip


async def test_consumer_group_heartbeat_assigns_by_id_with_names_and_takes_owned_either_way(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        topic_id = await give_id(b, "t")
        no = await run(consumer_group_heartbeat.run, b, beat("m", 0))
        assert no.error_code == NOT_COORDINATOR
        await coordinate_groups(b, clock)
        empty = await run(consumer_group_heartbeat.run, b, beat("", 0))
        assert (empty.error_code, empty.error_message) == (
            InvalidRequestError.code, "MemberId can't be empty.")  # fmt: skip
        member = str(uuid.uuid4())
        joined = await run(consumer_group_heartbeat.run, b,
                           beat(member, 0, subscribed_topic_names=("t",), owned=()))  # fmt: skip
        assert joined.error_code == 0 and joined.member_id == member and joined.member_epoch > 0
        assert joined.assignment == (consumer_group_heartbeat.AssignedTopic(topic_id, "t", (0,)),)
        by_name = consumer_group_heartbeat.OwnedTopic(None, "t", (0,))
        gone = consumer_group_heartbeat.OwnedTopic(None, "deleted", (0,))
        again = await run(consumer_group_heartbeat.run, b,
                          beat(member, joined.member_epoch, owned=(by_name, gone)))  # fmt: skip
        assert again.error_code == 0 and again.member_epoch == joined.member_epoch
        by_id = consumer_group_heartbeat.OwnedTopic(topic_id, None, (0,))
        again = await run(consumer_group_heartbeat.run, b,
                          beat(member, joined.member_epoch, owned=(by_id,)))  # fmt: skip
        assert again.error_code == 0 and again.member_epoch == joined.member_epoch
        v0 = beat("", 0, required=False, subscribed_topic_names=("t",), owned=())
        made = await run(consumer_group_heartbeat.run, b, v0)
        assert made.error_code == 0 and made.member_id  # Kafka v0: the coordinator makes it


async def test_list_groups_filters_by_either_state_name_and_by_type(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        await give_id(b, "t")
        no = await run(list_groups.run, b, list_groups.ListGroups())
        assert no == list_groups.ListGroupsResult(0, ())  # a broker coordinating nothing lists none
        await coordinate_groups(b, clock)
        await join(b, "g")
        cgh_member = beat(str(uuid.uuid4()), 0, subscribed_topic_names=("t",), owned=())
        joined = await run(
            consumer_group_heartbeat.run, b, dataclasses.replace(cgh_member, group_id="c")
        )
        assert joined.error_code == 0

        async def ids(**filters: frozenset[str]) -> list[tuple[str, str]]:
            result = await run(list_groups.run, b, list_groups.ListGroups(**filters))
            assert result.error_code == 0
            return [(g.group_id, g.group_type) for g in result.groups]

        assert await ids() == [("c", "consumer"), ("g", "classic")]
        # g awaits its rebalance's end: "Rebalancing" natively, "CompletingRebalance" in Kafka
        assert await ids(states=frozenset({"rebalancing"})) == [("g", "classic")]
        assert await ids(states=frozenset({"completingrebalance"})) == [("g", "classic")]
        assert await ids(states=frozenset({"stable"})) == [("c", "consumer")]
        assert await ids(types=frozenset({"consumer"})) == [("c", "consumer")]
        assert await ids(states=frozenset({"dead"})) == []


async def test_describe_groups_in_the_order_asked_each_kind_with_its_own_refusal(
    tmp_path: Path,
) -> None:
    """A classic native group (partitions, join order), a consumer group (epochs, target), an
    unknown one (GROUP_ID_NOT_FOUND, Dead) and a refused one (no state), in the order asked;
    operations only when asked (KIP-430). The native door used to say NOT_COORDINATOR without
    a coordinator and sort members by id; Kafka's COORDINATOR_NOT_AVAILABLE and join order
    now hold on both doors."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        await give_id(b, "t")
        no = await run(describe_groups.run, b, describe_groups.DescribeGroups(("g",)))
        assert [(d.error_code, d.state) for d in no.groups] == [(NOT_COORDINATOR, "Dead")]
        await coordinate_groups(b, clock)
        generation, member = await join(b, "g")
        cgh_member = beat(str(uuid.uuid4()), 0, subscribed_topic_names=("t",), owned=())
        joined = await run(
            consumer_group_heartbeat.run, b, dataclasses.replace(cgh_member, group_id="c")
        )
        assert joined.error_code == 0
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        for g in ("g", "c", "missing"):
            grant(authz, AclOperation.DESCRIBE, ResourceType.GROUP, g)
        ask = describe_groups.DescribeGroups(("secret", "c", "g", "missing"), True)
        result = await run(describe_groups.run, b, ask)
        secret, c, g, missing = result.groups
        assert (secret.error_code, secret.state) == (GroupAuthorizationFailedError.code, "")
        assert secret.authorized_operations == describe_groups.NO_OPERATIONS
        assert (missing.error_code, missing.state) == (GroupIdNotFoundError.code, "Dead")
        assert (g.error_code, g.group_type, g.generation_id) == (0, "classic", generation)
        assert g.kafka_state == "CompletingRebalance" and g.protocol == "range"
        assert [(m.member_id, m.assignment_bytes) for m in g.members] == [(member, None)]
        assert g.authorized_operations == 1 << AclOperation.DESCRIBE.value
        assert (c.error_code, c.group_type, c.kafka_state) == (0, "consumer", "Stable")
        (cm,) = c.members
        assert cm.member_id == cgh_member.member_id and cm.member_epoch == joined.member_epoch
        assert cm.assignment == cm.target == (("t", (0,)),)
        quiet = await run(describe_groups.run, b, describe_groups.DescribeGroups(("g",)))
        assert quiet.groups[0].authorized_operations == describe_groups.NO_OPERATIONS


async def test_sync_group_hands_out_the_leaders_assignment_with_the_groups_protocol(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        no = await run(sync_group.run, b, sync_group.SyncGroup("k", 1, "m"))
        assert no == sync_group.SyncGroupResult(NOT_COORDINATOR)
        await coordinate_groups(b, clock)
        joined = await b.ctx.groups.join_classic(
            "k", "", "c", "/127.0.0.1", 10_000, 10_000, "consumer", [("range", b"sub")], False
        )
        assert joined.error_code == 0 and joined.leader == joined.member_id, joined
        member, generation = joined.member_id, joined.generation_id
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        mine = sync_group.SyncGroup("k", generation, member, ((member, b"mine"),))
        denied = await run(sync_group.run, b, mine)
        assert denied == sync_group.SyncGroupResult(GroupAuthorizationFailedError.code)
        grant(authz, AclOperation.READ, ResourceType.GROUP, "k")
        grant(authz, AclOperation.READ, ResourceType.GROUP, "nope")
        synced = await run(sync_group.run, b, mine)
        assert synced == sync_group.SyncGroupResult(0, b"mine", "consumer", "range")
        old = await run(sync_group.run, b, dataclasses.replace(mine, generation_id=generation + 1))
        assert old == sync_group.SyncGroupResult(
            IllegalGenerationError.code, b"", "consumer", "range")  # fmt: skip
        unknown = await run(sync_group.run, b, dataclasses.replace(mine, group_id="nope"))
        assert unknown.error_code != 0 and unknown.protocol_type is None


async def test_leave_group_at_a_broker_not_coordinating_the_group_is_not_coordinator(
    tmp_path: Path,
) -> None:
    """The top-level NOT_COORDINATOR (Kafka v3+ clients look the coordinator up again on it),
    not a per-member code under a top-level NONE."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        groups = b.ctx.groups
        await b.lead(OFFSETS_TOPIC, 1, leader=BROKER_ID + 1)
        await settle(groups)
        members = (leave_group.LeavingMember("m"),)
        result = await run(leave_group.run, b, leave_group.LeaveGroup("g", members))
        assert result == leave_group.LeaveGroupResult(NotCoordinatorError.code, ())


async def test_find_coordinator_answers_each_key_and_refuses_each_on_its_own(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        fc = find_coordinator.FindCoordinator
        (no,) = (await run(find_coordinator.run, b, fc(("g",)))).coordinators
        assert (no.error_code, no.node_id, no.host, no.port) == (NO_COORDINATOR, -1, "", -1)
        (no,) = (await run(find_coordinator.run, b, fc(("tx",), TRANSACTION_KEY_TYPE))).coordinators
        assert no.error_code == NO_COORDINATOR
        await coordinate_groups(b, clock)
        (odd,) = (await run(find_coordinator.run, b, fc(("g",), 2))).coordinators
        assert odd.error_code == InvalidRequestError.code
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.DESCRIBE, ResourceType.GROUP, "g")
        grant(authz, AclOperation.DESCRIBE, ResourceType.GROUP, "")
        result = await run(find_coordinator.run, b, fc(("secret", "g", "")))
        secret, g, empty = result.coordinators
        assert (secret.key, secret.error_code) == ("secret", GroupAuthorizationFailedError.code)
        assert secret.error_message == "User:alice may not Describe group 'secret'"
        assert (g.key, g.error_code, g.node_id, g.host, g.port) == (
            "g", 0, 1, "127.0.0.1", b.port)  # fmt: skip
        assert empty.error_code == 24  # INVALID_GROUP_ID
        kafka = await run(find_coordinator.run, b, fc(("g",), door=KAFKA_DOOR))
        assert kafka.coordinators[0].port == b.kafka_port


async def test_find_coordinator_gives_the_listener_the_client_came_in_on() -> None:
    """On its door: a SASL client is not sent to the PLAINTEXT listener. Without a listener
    of that name the native door gives the inter-broker address (as its Metadata does), the
    Kafka door COORDINATOR_NOT_AVAILABLE (Kafka's answer; it used to say LISTENER_NOT_FOUND)."""
    broker = BrokerInfo(2, "10.0.0.2", 9093, endpoints=[
        Endpoint(NATIVE_DOOR, "PLAINTEXT", "10.0.0.2", 9093, "PLAINTEXT"),
        Endpoint(NATIVE_DOOR, "SASL_SSL", "broker2.example.com", 9095, "SASL_SSL"),
        Endpoint(KAFKA_DOOR, "SASL_SSL", "broker2.example.com", 9094, "SASL_SSL"),
    ])  # fmt: skip

    async def found(group_id: str) -> FindCoordinatorResponse:
        return FindCoordinatorResponse(0, None, 2, "10.0.0.2", 9093)

    ctx: Any = SimpleNamespace(authorizer=None, groups=SimpleNamespace(find_coordinator=found),
                               metadata=SimpleNamespace(brokers={2: broker}))  # fmt: skip

    async def where(door: str, listener: str) -> tuple[int, int, str, int]:
        req = find_coordinator.FindCoordinator(("g",), door=door)
        (c,) = (await find_coordinator.run(ctx, Session(listener=listener), req)).coordinators
        return c.error_code, c.node_id, c.host, c.port

    assert await where(NATIVE_DOOR, "SASL_SSL") == (0, 2, "broker2.example.com", 9095)
    assert await where(NATIVE_DOOR, "CLIENTS") == (0, 2, "10.0.0.2", 9093)
    assert await where(KAFKA_DOOR, "SASL_SSL") == (0, 2, "broker2.example.com", 9094)
    assert await where(KAFKA_DOOR, "PLAINTEXT") == (NO_COORDINATOR, -1, "", -1)


async def test_join_group_for_either_kind_of_member(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A native member gets its partitions; a Kafka member (KIP-394) first its id, then, as
    leader, every member's metadata. No coordinator is COORDINATOR_NOT_AVAILABLE on both
    doors (the native door said NOT_COORDINATOR)."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t", 2)
        native = join_group.NativeSubscription(("t",), None, "range")
        mine = join_group.JoinGroup("n", "", 10_000, 10_000, "c", native=native)
        no = await run(join_group.run, b, mine)
        assert no == join_group.JoinGroupResult(NOT_COORDINATOR, -1, "")
        await coordinate_groups(b, clock)
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        denied = await run(join_group.run, b, mine)
        assert denied == join_group.JoinGroupResult(GroupAuthorizationFailedError.code, -1, "")
        grant(authz, AclOperation.READ, ResourceType.GROUP, "n")
        grant(authz, AclOperation.READ, ResourceType.GROUP, "k")
        joined = await run(join_group.run, b, mine)
        assert (joined.error_code, joined.generation_id) == (0, 1) and joined.member_id
        assert joined.partitions_to_own == (("t", (0, 1)),)
        kafka = join_group.JoinGroup(
            "k", "", 10_000, 10_000, "c", "/127.0.0.1", "i1", "consumer", (("range", b"sub"),),
            require_known_member_id=True, reason="starting")  # fmt: skip
        with caplog.at_level("INFO", "odradek.broker.join_group"):
            first = await run(join_group.run, b, kafka)
        assert "member '' (instance 'i1') joins: starting" in caplog.text
        # a static member joins at once, and with an id the coordinator made
        assert first.error_code == 0 and first.member_id and first.leader == first.member_id
        assert first.members == (join_group.JoinedMember(first.member_id, "i1", b"sub"),)
        assert (first.protocol_type, first.protocol_name) == ("consumer", "range")
        dynamic = dataclasses.replace(kafka, group_instance_id=None, reason=None)
        required = await run(join_group.run, b, dynamic)
        assert required.error_code == 79 and required.member_id  # MEMBER_ID_REQUIRED


async def test_consumer_group_describe_in_the_order_asked_each_with_its_refusal(
    tmp_path: Path,
) -> None:
    cgd = consumer_group_describe
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        topic_id = await give_id(b, "t")
        (no,) = (await run(cgd.run, b, cgd.ConsumerGroupDescribe(("c",)))).groups
        assert (no.error_code, no.state) == (NOT_COORDINATOR, "Dead")
        await coordinate_groups(b, clock)
        await join(b, "g")
        member = beat(str(uuid.uuid4()), 0, subscribed_topic_names=("t",), owned=())
        joined = await run(consumer_group_heartbeat.run, b,
                           dataclasses.replace(member, group_id="c"))  # fmt: skip
        assert joined.error_code == 0
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        for g in ("c", "g", "missing"):
            grant(authz, AclOperation.DESCRIBE, ResourceType.GROUP, g)
        ask = cgd.ConsumerGroupDescribe(("secret", "c", "g", "missing"), True)
        secret, c, g, missing = (await run(cgd.run, b, ask)).groups
        assert (secret.group_id, secret.error_code, secret.state) == (
            "secret", GroupAuthorizationFailedError.code, "")  # fmt: skip
        assert secret.error_message == "User:alice may not Describe group 'secret'"
        assert (g.error_code, g.error_message, g.state) == (
            GroupIdNotFoundError.code, "Group g is not a consumer group.", "Dead")  # fmt: skip
        assert (missing.error_code, missing.error_message) == (
            GroupIdNotFoundError.code, "Group missing not found.")  # fmt: skip
        assert (c.error_code, c.group_epoch, c.assignment_epoch) == (0, 1, 1)
        assert c.authorized_operations == 1 << AclOperation.DESCRIBE.value
        (m,) = c.members
        assert (m.member_id, m.member_epoch, m.subscribed_topic_names) == (
            member.member_id, joined.member_epoch, ("t",))  # fmt: skip
        assert m.assignment == m.target_assignment == (cgd.AssignedTopic(topic_id, "t", (0,)),)
        quiet = await run(cgd.run, b, cgd.ConsumerGroupDescribe(("c",)))
        assert quiet.groups[0].authorized_operations == cgd.NO_OPERATIONS
        assert quiet.groups[0].state == c.state != ""

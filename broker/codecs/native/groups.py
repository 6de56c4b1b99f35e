"""The native door's codecs of the group APIs (see broker/codecs/native/__init__.py).

What the native door does not send is filled in here: a native Heartbeat or LeaveGroup names
one member, a ConsumerGroupHeartbeat names topics (never ids) and no rack or client host, and its
client makes its member id. What it cannot say is dropped: LeaveGroup answers one code (the
request's refusal, else the member's). DescribeGroups shows a Kafka member's assignment as the
partitions its bytes name. FindCoordinator names one key and answers at the native listener; a
native JoinGroup names topics (the coordinator assigns for it) where a Kafka member sends
protocols.
"""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import (
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_fetch,
)
from protocol.api import group
from protocol.api.metadata import NATIVE_DOOR
from protocol.codec import Request
from protocol.kafka.consumer_protocol import assigned_partitions

# ----- Heartbeat ------------------------------------------------------------------------------


def _heartbeat_in(request: Request) -> heartbeat.Heartbeat:
    req: group.HeartbeatRequest = request.body
    return heartbeat.Heartbeat(req.group_id, req.generation_id, req.member_id,
                               req.group_instance_id)  # fmt: skip


def _heartbeat_out(request: Request, result: heartbeat.HeartbeatResult) -> group.HeartbeatResponse:
    return group.HeartbeatResponse(result.error_code)


HEARTBEAT = Codec(_heartbeat_in, _heartbeat_out)

# ----- ConsumerGroupHeartbeat -----------------------------------------------------------------


def _cgh_in(request: Request) -> consumer_group_heartbeat.ConsumerGroupHeartbeat:
    req: group.ConsumerGroupHeartbeatRequest = request.body
    owned = None
    if req.owned is not None:
        owned = tuple(
            consumer_group_heartbeat.OwnedTopic(None, t.topic, tuple(t.partitions))
            for t in req.owned
        )
    names = req.subscribed_topic_names
    return consumer_group_heartbeat.ConsumerGroupHeartbeat(
        req.group_id, req.member_id, req.member_epoch, member_id_required=True,
        instance_id=req.instance_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=req.subscribed_topic_regex, server_assignor=req.server_assignor,
        owned=owned, client_id=req.client_id or request.header.client_id or "",
    )  # fmt: skip


def _cgh_out(
    request: Request, result: consumer_group_heartbeat.ConsumerGroupHeartbeatResult
) -> group.ConsumerGroupHeartbeatResponse:
    assignment = None
    if result.assignment is not None:
        assignment = [
            group.TopicPartitions(a.name or str(a.topic_id), list(a.partitions))
            for a in result.assignment
        ]
    return group.ConsumerGroupHeartbeatResponse(
        result.error_code, result.error_message, result.member_id, result.member_epoch,
        result.heartbeat_interval_ms, assignment,
    )  # fmt: skip


CONSUMER_GROUP_HEARTBEAT = Codec(_cgh_in, _cgh_out)

# ----- LeaveGroup -----------------------------------------------------------------------------


def _leave_in(request: Request) -> leave_group.LeaveGroup:
    req: group.LeaveGroupRequest = request.body
    member = leave_group.LeavingMember(req.member_id, req.group_instance_id)
    return leave_group.LeaveGroup(req.group_id, (member,))


def _leave_out(request: Request, result: leave_group.LeaveGroupResult) -> group.LeaveGroupResponse:
    if result.error_code or not result.members:
        return group.LeaveGroupResponse(result.error_code)
    return group.LeaveGroupResponse(result.members[0].error_code)


LEAVE_GROUP = Codec(_leave_in, _leave_out)

# ----- ListGroups -----------------------------------------------------------------------------


def _list_groups_in(request: Request) -> list_groups.ListGroups:
    req: group.ListGroupsRequest = request.body
    states = None if req.states is None else frozenset(s.lower() for s in req.states)
    return list_groups.ListGroups(states)


def _list_groups_out(
    request: Request, result: list_groups.ListGroupsResult
) -> group.ListGroupsResponse:
    return group.ListGroupsResponse(result.error_code, [
        group.ListedGroup(g.group_id, g.state, g.protocol_type, g.kafka_state, g.group_type)
        for g in result.groups
    ])  # fmt: skip


LIST_GROUPS = Codec(_list_groups_in, _list_groups_out)

# ----- DeleteGroups ---------------------------------------------------------------------------


def _delete_groups_in(request: Request) -> delete_groups.DeleteGroups:
    req: group.DeleteGroupsRequest = request.body
    return delete_groups.DeleteGroups(tuple(req.group_ids))


def _delete_groups_out(
    request: Request, result: delete_groups.DeleteGroupsResult
) -> group.DeleteGroupsResponse:
    return group.DeleteGroupsResponse(
        [group.DeletedGroup(r.group_id, r.error_code) for r in result.results]
    )


DELETE_GROUPS = Codec(_delete_groups_in, _delete_groups_out)

# ----- DescribeGroups -------------------------------------------------------------------------


def _describe_groups_in(request: Request) -> describe_groups.DescribeGroups:
    req: group.DescribeGroupsRequest = request.body
    return describe_groups.DescribeGroups(tuple(req.group_ids))


def _topics(parts: describe_groups.Partitions) -> list[group.TopicPartitions]:
    return [group.TopicPartitions(t, list(ps)) for t, ps in parts]


def _assigned(m: describe_groups.Member) -> list[group.TopicPartitions]:
    if m.assignment is not None:
        return _topics(m.assignment)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assigned_partitions(m.assignment_bytes or b""):
        by_topic.setdefault(topic, []).append(partition)
    return [group.TopicPartitions(t, ps) for t, ps in by_topic.items()]


def _describe_groups_out(
    request: Request, result: describe_groups.DescribeGroupsResult
) -> group.DescribeGroupsResponse:
    return group.DescribeGroupsResponse([
        group.GroupDescription(
            d.error_code, d.group_id, d.state, d.generation_id, d.protocol,
            [group.MemberDescription(m.member_id, m.client_id, _assigned(m), m.client_host,
                                     m.group_instance_id, m.member_epoch,
                                     None if m.target is None else _topics(m.target))
             for m in d.members],
            d.protocol_type, d.kafka_state, d.group_type, d.group_epoch,
            d.target_assignment_epoch,
        )
        for d in result.groups
    ])  # fmt: skip


DESCRIBE_GROUPS = Codec(_describe_groups_in, _describe_groups_out)

# ----- FindCoordinator ------------------------------------------------------------------------


def _find_coordinator_in(request: Request) -> find_coordinator.FindCoordinator:
    req: group.FindCoordinatorRequest = request.body
    return find_coordinator.FindCoordinator((req.group_id,), req.key_type, NATIVE_DOOR)


def _find_coordinator_out(
    request: Request, result: find_coordinator.FindCoordinatorResult
) -> group.FindCoordinatorResponse:
    (c,) = result.coordinators
    return group.FindCoordinatorResponse(c.error_code, c.error_message, c.node_id, c.host, c.port)


FIND_COORDINATOR = Codec(_find_coordinator_in, _find_coordinator_out)

# ----- OffsetCommit ---------------------------------------------------------------------------


def _offset_commit_in(request: Request) -> offset_commit.OffsetCommit:
    req: group.OffsetCommitRequest = request.body
    return offset_commit.OffsetCommit(
        req.group_id, req.generation_id, req.member_id,
        tuple(offset_commit.CommitTopic(t.name, tuple(
            offset_commit.CommitPartition(p.partition, p.offset, p.metadata, p.leader_epoch)
            for p in t.partitions)) for t in req.topics),
        req.group_instance_id,
    )  # fmt: skip


def _offset_commit_out(
    request: Request, result: offset_commit.OffsetCommitResult
) -> group.OffsetCommitResponse:
    return group.OffsetCommitResponse([
        group.TopicResult(t.name, [group.PartitionResult(p, code) for p, code in t.partitions])
        for t in result.topics
    ])  # fmt: skip


OFFSET_COMMIT = Codec(_offset_commit_in, _offset_commit_out)

# ----- OffsetFetch ----------------------------------------------------------------------------


def _offset_fetch_in(request: Request) -> offset_fetch.OffsetFetch:
    req: group.OffsetFetchRequest = request.body
    topics = None
    if req.topics is not None:
        topics = tuple((t.topic, tuple(t.partitions)) for t in req.topics)
    return offset_fetch.OffsetFetch((offset_fetch.GroupWanted(req.group_id, topics),))


def _offset_fetch_out(
    request: Request, result: offset_fetch.OffsetFetchResult
) -> group.OffsetFetchResponse:
    (g,) = result.groups
    return group.OffsetFetchResponse(g.error_code, [
        group.FetchedTopic(t.name, [
            group.FetchedOffset(p.partition, p.offset, p.metadata, p.error_code, p.leader_epoch)
            for p in t.partitions])
        for t in g.topics
    ])  # fmt: skip


OFFSET_FETCH = Codec(_offset_fetch_in, _offset_fetch_out)

# ----- JoinGroup ------------------------------------------------------------------------------


def _join_in(request: Request) -> join_group.JoinGroup:
    req: group.JoinGroupRequest = request.body
    subscription = join_group.NativeSubscription(
        tuple(req.topics), req.topic_pattern, req.assignment_strategy
    )
    return join_group.JoinGroup(
        req.group_id, req.member_id, req.session_timeout_ms, req.rebalance_timeout_ms,
        req.client_id, group_instance_id=req.group_instance_id, native=subscription,
    )  # fmt: skip


def _join_out(request: Request, result: join_group.JoinGroupResult) -> group.JoinGroupResponse:
    return group.JoinGroupResponse(
        result.error_code, result.generation_id, result.member_id,
        [group.TopicPartitions(t, list(ps)) for t, ps in result.partitions_to_own],
        result.error_message,
    )  # fmt: skip


JOIN_GROUP = Codec(_join_in, _join_out)

"""The Kafka door's codecs of the group APIs (see broker/codecs/kafka/__init__.py).

Version differences that are wire shape stay here: LeaveGroup v0-v2 name one member and answer
one code, v3+ a list with a code each; Heartbeat v3+ carry the group instance id;
ConsumerGroupHeartbeat v1+ require the member id the client made (KIP-1082), so the codec says
so to the operation, which refuses an empty one. DescribeGroups v0-v5 answer an unknown group,
and a KIP-848 consumer group (ConsumerGroupDescribe's), as NONE and Dead; v6 (KIP-1043) as
GROUP_ID_NOT_FOUND and Dead with Kafka's message, the operation's answer; a native member's
assignment goes out in the consumer protocol's encoding. FindCoordinator v4+ (v5: the
TRANSACTION_ABORTABLE code, which it never answers; v6: share groups' key type 2, refused as
any unknown key type) and OffsetFetch v8+ carry several keys or groups (the others one);
OffsetFetch v1 has no top-level code, so a group's error goes on each partition asked. What a
version means is said to the operation: OffsetCommit v9+ carries a KIP-848 member's epoch,
JoinGroup v4+ requires a known member id (KIP-394) and v9+ may skip the assignment (KIP-814).
ConsumerGroupDescribe v1 adds each member's type (consumer).
"""

from __future__ import annotations

from typing import Any

from broker.codecs import Codec
from broker.operations import (
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from protocol.api.group import GROUP_KEY_TYPE
from protocol.api.metadata import KAFKA_DOOR
from protocol.errors import GroupIdNotFoundError, UnknownTopicIdError
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class
from protocol.kafka.consumer_protocol import NATIVE_PROTOCOL_TYPE, encode_assignment

# ----- Heartbeat (12) -------------------------------------------------------------------------


def _heartbeat_in(request: KafkaRequest) -> heartbeat.Heartbeat:
    req = request.body
    instance_id = getattr(req, "group_instance_id", None)
    return heartbeat.Heartbeat(req.group_id, req.generation_id, req.member_id, instance_id)


def _heartbeat_out(request: KafkaRequest, result: heartbeat.HeartbeatResult) -> Any:
    cls = response_class(v.HEARTBEAT, request.header.api_version)
    return make(cls, throttle_time=0, error_code=result.error_code)


HEARTBEAT = Codec(_heartbeat_in, _heartbeat_out)

# ----- ConsumerGroupHeartbeat (68) ------------------------------------------------------------

CLIENT_MEMBER_ID_FROM = 1  # KIP-1082: from v1 the client makes its member id


def _cgh_in(request: KafkaRequest) -> consumer_group_heartbeat.ConsumerGroupHeartbeat:
    req = request.body
    owned = None
    if req.topic_partitions is not None:
        owned = tuple(
            consumer_group_heartbeat.OwnedTopic(t.topic_id, None, tuple(t.partitions))
            for t in req.topic_partitions
        )
    names = req.subscribed_topic_names
    return consumer_group_heartbeat.ConsumerGroupHeartbeat(
        req.group_id, req.member_id, req.member_epoch,
        member_id_required=request.header.api_version >= CLIENT_MEMBER_ID_FROM,
        instance_id=req.instance_id, rack_id=req.rack_id,
        rebalance_timeout_ms=millis(req.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(req, "subscribed_topic_regex", None),
        server_assignor=req.server_assignor, owned=owned,
        client_id=request.header.client_id or "", client_host=request.client_host,
    )  # fmt: skip


def _cgh_out(
    request: KafkaRequest, result: consumer_group_heartbeat.ConsumerGroupHeartbeatResult
) -> Any:
    cls = response_class(v.CONSUMER_GROUP_HEARTBEAT, request.header.api_version)
    assignment = None
    if result.assignment is not None:
        tp_cls = nested(cls, "TopicPartitions")
        assignment = make(
            nested(cls, "Assignment"),
            topic_partitions=tuple(
                make(tp_cls, topic_id=a.topic_id, partitions=a.partitions)
                for a in result.assignment
            ),
        )
    return make(
        cls, throttle_time=0, error_code=result.error_code, error_message=result.error_message,
        member_id=result.member_id, member_epoch=result.member_epoch,
        heartbeat_interval=result.heartbeat_interval_ms, assignment=assignment,
    )  # fmt: skip


CONSUMER_GROUP_HEARTBEAT = Codec(_cgh_in, _cgh_out)

# ----- LeaveGroup (13) ------------------------------------------------------------------------

BATCH_FROM = 3  # v3+: several members, each with its own code (KIP-345)


def _leave_in(request: KafkaRequest) -> leave_group.LeaveGroup:
    req = request.body
    if request.header.api_version < BATCH_FROM:
        return leave_group.LeaveGroup(req.group_id, (leave_group.LeavingMember(req.member_id),))
    members = tuple(
        leave_group.LeavingMember(
            m.member_id, m.group_instance_id or None, getattr(m, "reason", None)
        )
        for m in req.members
    )
    return leave_group.LeaveGroup(req.group_id, members)


def _leave_out(request: KafkaRequest, result: leave_group.LeaveGroupResult) -> Any:
    version = request.header.api_version
    cls = response_class(v.LEAVE_GROUP, version)
    if version < BATCH_FROM:
        code = result.error_code or (result.members[0].error_code if result.members else 0)
        return make(cls, throttle_time=0, error_code=code)
    member_cls = nested(cls, "MemberResponse")
    members = tuple(
        make(
            member_cls,
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            error_code=m.error_code,
        )
        for m in result.members
    )
    return make(cls, throttle_time=0, error_code=result.error_code, members=members)


LEAVE_GROUP = Codec(_leave_in, _leave_out)

# ----- ListGroups (16) ------------------------------------------------------------------------


def _list_groups_in(request: KafkaRequest) -> list_groups.ListGroups:
    body = request.body  # v4+ states_filter, v5+ types_filter (KIP-848); empty: no filter
    states = frozenset(s.lower() for s in getattr(body, "states_filter", ()) or ())
    types = frozenset(t.lower() for t in getattr(body, "types_filter", ()) or ())
    return list_groups.ListGroups(states or None, types or None)


def _list_groups_out(request: KafkaRequest, result: list_groups.ListGroupsResult) -> Any:
    cls = response_class(v.LIST_GROUPS, request.header.api_version)
    listed_cls = nested(cls, "ListedGroup")
    groups = tuple(
        make(
            listed_cls,
            group_id=g.group_id,
            protocol_type=g.protocol_type or NATIVE_PROTOCOL_TYPE,
            group_state=g.kafka_state,
            group_type=g.group_type,
        )
        for g in result.groups
    )
    return make(cls, throttle_time=0, error_code=result.error_code, groups=groups)


LIST_GROUPS = Codec(_list_groups_in, _list_groups_out)

# ----- DeleteGroups (42) ----------------------------------------------------------------------


def _delete_groups_in(request: KafkaRequest) -> delete_groups.DeleteGroups:
    return delete_groups.DeleteGroups(tuple(request.body.groups_names))


def _delete_groups_out(request: KafkaRequest, result: delete_groups.DeleteGroupsResult) -> Any:
    cls = response_class(v.DELETE_GROUPS, request.header.api_version)
    result_cls = nested(cls, "DeletableGroupResult")
    return make(cls, throttle_time=0, results=tuple(
        make(result_cls, group_id=r.group_id, error_code=r.error_code) for r in result.results
    ))  # fmt: skip


DELETE_GROUPS = Codec(_delete_groups_in, _delete_groups_out)

# ----- DescribeGroups (15) --------------------------------------------------------------------

NO_OPERATIONS = describe_groups.NO_OPERATIONS


def _describe_groups_in(request: KafkaRequest) -> describe_groups.DescribeGroups:
    body = request.body  # v3+ include_authorized_operations (KIP-430)
    asked = bool(getattr(body, "include_authorized_operations", False))
    return describe_groups.DescribeGroups(tuple(body.groups), asked)


def _member_assignment(m: describe_groups.Member) -> bytes:
    if m.assignment_bytes is not None:
        return m.assignment_bytes
    return encode_assignment([(t, p) for t, ps in m.assignment or () for p in ps])


GROUP_ID_NOT_FOUND_FROM = 6  # DescribeGroups v6+ (KIP-1043): no such classic group says so


def _described(cls: Any, d: describe_groups.Described, version: int) -> Any:
    group_cls = nested(cls, "DescribedGroup")
    shown = d.error_code == 0 and d.group_type == "classic"
    if not shown:
        dead = d.error_code in (0, GroupIdNotFoundError.code)  # no such classic group
        code, message = (0 if dead else d.error_code), None
        if dead and version >= GROUP_ID_NOT_FOUND_FROM:  # Kafka's messages
            code = GroupIdNotFoundError.code
            message = (f"Group {d.group_id} not found." if d.error_code
                       else f"Group {d.group_id} is not a classic group.")  # fmt: skip
        return make(group_cls, error_code=code, error_message=message, group_id=d.group_id,
                    group_state="Dead" if dead else d.kafka_state, protocol_type="",
                    protocol_data="", members=(), authorized_operations=NO_OPERATIONS)  # fmt: skip
    member_cls = nested(cls, "DescribedGroupMember")
    return make(
        group_cls, error_code=0, group_id=d.group_id, group_state=d.kafka_state,
        protocol_type=d.protocol_type or NATIVE_PROTOCOL_TYPE, protocol_data=d.protocol,
        authorized_operations=d.authorized_operations,
        members=tuple(
            make(member_cls, member_id=m.member_id, group_instance_id=m.group_instance_id,
                 client_id=m.client_id, client_host=m.client_host, member_metadata=m.metadata,
                 member_assignment=_member_assignment(m))
            for m in d.members
        ),
    )  # fmt: skip


def _describe_groups_out(
    request: KafkaRequest, result: describe_groups.DescribeGroupsResult
) -> Any:
    version = request.header.api_version
    cls = response_class(v.DESCRIBE_GROUPS, version)
    return make(cls, throttle_time=0,
                groups=tuple(_described(cls, d, version) for d in result.groups))  # fmt: skip


DESCRIBE_GROUPS = Codec(_describe_groups_in, _describe_groups_out)

# ----- SyncGroup (14) -------------------------------------------------------------------------


def _sync_in(request: KafkaRequest) -> sync_group.SyncGroup:
    req = request.body  # v3+ group_instance_id (KIP-345), v5+ protocol type and name
    return sync_group.SyncGroup(
        req.group_id, req.generation_id, req.member_id,
        tuple((a.member_id, bytes(a.assignment)) for a in req.assignments),
        getattr(req, "protocol_type", None), getattr(req, "protocol_name", None),
        getattr(req, "group_instance_id", None) or None,
    )  # fmt: skip


def _sync_out(request: KafkaRequest, result: sync_group.SyncGroupResult) -> Any:
    return make(
        response_class(v.SYNC_GROUP, request.header.api_version), throttle_time=0,
        error_code=result.error_code, assignment=result.assignment,
        protocol_type=result.protocol_type, protocol_name=result.protocol_name,
    )  # fmt: skip


SYNC_GROUP = Codec(_sync_in, _sync_out)

# ----- FindCoordinator (10) -------------------------------------------------------------------

BATCHED_KEYS_FROM = 4  # v4+: several keys, a coordinator each (KIP-699)


def _find_coordinator_in(request: KafkaRequest) -> find_coordinator.FindCoordinator:
    req = request.body  # v1+ key_type (v0: a group)
    key_type = getattr(req, "key_type", GROUP_KEY_TYPE)
    if request.header.api_version >= BATCHED_KEYS_FROM:
        return find_coordinator.FindCoordinator(tuple(req.coordinator_keys), key_type, KAFKA_DOOR)
    return find_coordinator.FindCoordinator((req.key,), key_type, KAFKA_DOOR)


def _find_coordinator_out(
    request: KafkaRequest, result: find_coordinator.FindCoordinatorResult
) -> Any:
    cls = response_class(v.FIND_COORDINATOR, request.header.api_version)
    if request.header.api_version >= BATCHED_KEYS_FROM:
        coordinator_cls = nested(cls, "Coordinator")
        return make(cls, throttle_time=0, coordinators=tuple(
            make(coordinator_cls, key=c.key, node_id=c.node_id, host=c.host, port=c.port,
                 error_code=c.error_code, error_message=c.error_message)
            for c in result.coordinators
        ))  # fmt: skip
    (c,) = result.coordinators
    return make(cls, throttle_time=0, error_code=c.error_code, error_message=c.error_message,
                node_id=c.node_id, host=c.host, port=c.port)  # fmt: skip


FIND_COORDINATOR = Codec(_find_coordinator_in, _find_coordinator_out)

# ----- OffsetCommit (8) -----------------------------------------------------------------------

MEMBER_EPOCH_FROM = 9  # v9+: a KIP-848 member's epoch in generation_id_or_member_epoch
COMMIT_TOPIC_IDS_FROM = 10  # v10+ (OffsetCommit and OffsetFetch): topics named by id


def _offset_commit_in(request: KafkaRequest) -> offset_commit.OffsetCommit:
    req = request.body  # v6+ committed_leader_epoch, v7+ group_instance_id
    by_id = request.header.api_version >= COMMIT_TOPIC_IDS_FROM
    return offset_commit.OffsetCommit(
        req.group_id, req.generation_id_or_member_epoch, req.member_id,
        tuple(offset_commit.CommitTopic("" if by_id else t.name, tuple(
            offset_commit.CommitPartition(p.partition_index, p.committed_offset,
                                          p.committed_metadata,
                                          getattr(p, "committed_leader_epoch", -1))
            for p in t.partitions)) for t in req.topics),
        getattr(req, "group_instance_id", None) or None,
        generation_is_epoch=request.header.api_version >= MEMBER_EPOCH_FROM,
        topic_ids=tuple(t.topic_id for t in req.topics) if by_id else None,
    )  # fmt: skip


def _offset_commit_out(request: KafkaRequest, result: offset_commit.OffsetCommitResult) -> Any:
    cls = response_class(v.OFFSET_COMMIT, request.header.api_version)
    topic_cls = nested(cls, "OffsetCommitResponseTopic")
    part_cls = nested(cls, "OffsetCommitResponsePartition")
    ids = result.topic_ids or {}
    unknown = result.unknown_ids_code
    return make(cls, throttle_time=0, topics=tuple(
        make(topic_cls, name=t.name, topic_id=ids.get(t.name), partitions=tuple(
            make(part_cls, partition_index=p, error_code=code) for p, code in t.partitions))
        for t in result.topics
    ) + tuple(
        make(topic_cls, name="", topic_id=topic_id, partitions=tuple(
            make(part_cls, partition_index=p, error_code=unknown) for p in indexes))
        for topic_id, indexes in result.unknown_ids
    ))  # fmt: skip


OFFSET_COMMIT = Codec(_offset_commit_in, _offset_commit_out)

# ----- OffsetFetch (9) ------------------------------------------------------------------------

GROUPS_FROM = 8  # v8+: several groups, each with its own code (KIP-709)
TOP_LEVEL_CODE_FROM = 2  # v1 has no top-level code: a group's error goes on each partition


def _wanted(topics: Any, by_id: bool = False) -> offset_fetch.Wanted | None:
    if topics is None:  # v2+: every committed partition
        return None
    return tuple(("" if by_id else t.name, tuple(t.partition_indexes)) for t in topics)


def _offset_fetch_in(request: KafkaRequest) -> offset_fetch.OffsetFetch:
    req = request.body  # v7+ require_stable (KIP-447), v9 member id and epoch (KIP-848)
    stable = bool(getattr(req, "require_stable", False))
    if request.header.api_version < GROUPS_FROM:
        wanted = offset_fetch.GroupWanted(req.group_id, _wanted(req.topics))
        return offset_fetch.OffsetFetch((wanted,), stable)
    by_id = request.header.api_version >= COMMIT_TOPIC_IDS_FROM
    return offset_fetch.OffsetFetch(tuple(
        offset_fetch.GroupWanted(
            g.group_id, _wanted(g.topics, by_id), getattr(g, "member_id", None),
            getattr(g, "member_epoch", -1),
            tuple(t.topic_id for t in g.topics) if by_id and g.topics is not None else None)
        for g in req.groups
    ), stable, by_id)  # fmt: skip


def _fetched_topics(cls: Any, g: offset_fetch.GroupOffsets, suffix: str) -> tuple[Any, ...]:
    topic_cls = nested(cls, "OffsetFetchResponseTopic" + suffix)
    part_cls = nested(cls, "OffsetFetchResponsePartition" + suffix)
    ids = g.topic_ids or {}
    unknown = tuple(
        (topic_id, tuple(offset_fetch.Fetched(p, -1, None, UnknownTopicIdError.code)
                         for p in indexes))
        for topic_id, indexes in g.unknown_ids
    )  # fmt: skip
    return tuple(
        make(topic_cls, name=name, topic_id=topic_id, partitions=tuple(
            make(part_cls, partition_index=p.partition, committed_offset=p.offset,
                 committed_leader_epoch=p.leader_epoch, metadata=p.metadata or "",
                 error_code=p.error_code)
            for p in parts))
        for name, topic_id, parts in (
            *((t.name, ids.get(t.name), t.partitions) for t in g.topics),
            *(("", topic_id, parts) for topic_id, parts in unknown),
        )
    )  # fmt: skip


def _offset_fetch_out(request: KafkaRequest, result: offset_fetch.OffsetFetchResult) -> Any:
    version = request.header.api_version
    cls = response_class(v.OFFSET_FETCH, version)
    if version >= GROUPS_FROM:
        group_cls = nested(cls, "OffsetFetchResponseGroup")
        return make(cls, throttle_time=0, groups=tuple(
            make(group_cls, group_id=g.group_id, error_code=g.error_code,
                 topics=_fetched_topics(cls, g, "s"))
            for g in result.groups
        ))  # fmt: skip
    (g,) = result.groups
    asked = request.body.topics
    if g.error_code and version < TOP_LEVEL_CODE_FROM and asked:
        g = offset_fetch.GroupOffsets(g.group_id, g.error_code, tuple(
            offset_fetch.FetchedTopic(t.name, tuple(
                offset_fetch.Fetched(p, -1, None, g.error_code) for p in t.partition_indexes))
            for t in asked
        ))  # fmt: skip
    return make(cls, throttle_time=0, error_code=g.error_code,
                topics=_fetched_topics(cls, g, ""))  # fmt: skip


OFFSET_FETCH = Codec(_offset_fetch_in, _offset_fetch_out)

# ----- OffsetDelete (47) ----------------------------------------------------------------------


def _offset_delete_in(request: KafkaRequest) -> offset_delete.OffsetDelete:
    req = request.body
    return offset_delete.OffsetDelete(req.group_id, tuple(
        (t.name, tuple(p.partition_index for p in t.partitions)) for t in req.topics
    ))  # fmt: skip


def _offset_delete_out(request: KafkaRequest, result: offset_delete.OffsetDeleteResult) -> Any:
    cls = response_class(v.OFFSET_DELETE, request.header.api_version)
    topic_cls = nested(cls, "OffsetDeleteResponseTopic")
    part_cls = nested(cls, "OffsetDeleteResponsePartition")
    return make(cls, throttle_time=0, error_code=result.error_code, topics=tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p, error_code=code) for p, code in t.partitions))
        for t in result.topics
    ))  # fmt: skip


OFFSET_DELETE = Codec(_offset_delete_in, _offset_delete_out)

# ----- JoinGroup (11) -------------------------------------------------------------------------

REQUIRE_KNOWN_MEMBER_ID_FROM = 4  # KIP-394: a new member is told its id, then joins with it
SKIP_ASSIGNMENT_FROM = 9  # KIP-814


def _join_in(request: KafkaRequest) -> join_group.JoinGroup:
    req = request.body  # v1+ rebalance_timeout, v5+ group_instance_id, v8+ reason
    version = request.header.api_version
    return join_group.JoinGroup(
        req.group_id, req.member_id, millis(req.session_timeout),
        millis(getattr(req, "rebalance_timeout", req.session_timeout)),
        request.header.client_id or "", request.client_host,
        getattr(req, "group_instance_id", None) or None, req.protocol_type,
        tuple((p.name, bytes(p.metadata)) for p in req.protocols),
        require_known_member_id=version >= REQUIRE_KNOWN_MEMBER_ID_FROM,
        skip_assignment_allowed=version >= SKIP_ASSIGNMENT_FROM,
        reason=getattr(req, "reason", None),
    )  # fmt: skip


def _join_out(request: KafkaRequest, result: join_group.JoinGroupResult) -> Any:
    cls = response_class(v.JOIN_GROUP, request.header.api_version)
    member_cls = nested(cls, "JoinGroupResponseMember")
    return make(
        cls, throttle_time=0, error_code=result.error_code, generation_id=result.generation_id,
        protocol_type=result.protocol_type, protocol_name=result.protocol_name or "",
        leader=result.leader, member_id=result.member_id, skip_assignment=result.skip_assignment,
        members=tuple(make(member_cls, member_id=m.member_id,
                           group_instance_id=m.group_instance_id, metadata=m.metadata)
                      for m in result.members),
    )  # fmt: skip


JOIN_GROUP = Codec(_join_in, _join_out)

# ----- ConsumerGroupDescribe (69) -------------------------------------------------------------

CONSUMER_MEMBER_TYPE = 1  # v1+: each member's protocol (KIP-1099)
CLASSIC_MEMBER_TYPE = 0  # a classic member inside a consumer group (online migration)


def _cgd_in(request: KafkaRequest) -> consumer_group_describe.ConsumerGroupDescribe:
    body = request.body
    asked = bool(body.include_authorized_operations)
    return consumer_group_describe.ConsumerGroupDescribe(tuple(body.group_ids), asked)


def _cgd_assignment(cls: Any, topics: tuple[consumer_group_describe.AssignedTopic, ...]) -> Any:
    tp_cls = nested(cls, "TopicPartitions")
    return make(nested(cls, "Assignment"), topic_partitions=tuple(
        make(tp_cls, topic_id=t.topic_id, topic_name=t.name or "", partitions=t.partitions)
        for t in topics
    ))  # fmt: skip


def _cgd_out(
    request: KafkaRequest, result: consumer_group_describe.ConsumerGroupDescribeResult
) -> Any:
    cls = response_class(v.CONSUMER_GROUP_DESCRIBE, request.header.api_version)
    group_cls, member_cls = nested(cls, "DescribedGroup"), nested(cls, "Member")
    return make(cls, throttle_time=0, groups=tuple(
        make(group_cls, error_code=d.error_code, error_message=d.error_message,
             group_id=d.group_id, group_state=d.state, group_epoch=d.group_epoch,
             assignment_epoch=d.assignment_epoch, assignor_name=d.assignor_name,
             authorized_operations=d.authorized_operations, members=tuple(
                 make(member_cls, member_id=m.member_id, instance_id=m.instance_id,
                      rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
                      client_host=m.client_host,
                      subscribed_topic_names=m.subscribed_topic_names,
                      subscribed_topic_regex=m.subscribed_topic_regex,
                      assignment=_cgd_assignment(cls, m.assignment),
                      target_assignment=_cgd_assignment(cls, m.target_assignment),
                      member_type=CLASSIC_MEMBER_TYPE if m.classic else CONSUMER_MEMBER_TYPE)
                 for m in d.members))
        for d in result.groups
    ))  # fmt: skip


CONSUMER_GROUP_DESCRIBE = Codec(_cgd_in, _cgd_out)

"""A share group (KIP-932, Kafka's `ShareGroup` and `GroupMetadataManager.shareGroupHeartbeat`):
its state and the pure operations of ShareGroupHeartbeat over it. No I/O; time is `now_ms`.

State: the group epoch (bumped when a member joins or leaves, a subscription changes or a
subscribed topic's partition count changes), the hash of the subscribed topics' metadata it
was bumped for (`metadata_hash`, Kafka 4.1's MetadataHash: 0 for none), the target assignment
(the simple share assignor's answer, share_assignor.py) and its epoch, the topics whose share
state may exist (`state_topics`), and per member its subscription, epoch (and the one before),
assigned partitions and session deadline. Share groups have no revocation step (several members
may read one partition): a member's epoch jumps to the assignment epoch at its next heartbeat,
which carries its new partitions. All but the session deadlines is written to
`__consumer_offsets` (share_replay.py); a member loaded from it starts a fresh session at the
first `expire` (its deadline 0 until then).

Group states (Kafka's ShareGroupState): Empty (no members), Stable (members), Dead (deleted).

Heartbeat rules, as Kafka's: an empty member id is INVALID_REQUEST; joining (epoch 0) needs
the subscribed topic names; -1 leaves; any other epoch must be the member's (else
FENCED_MEMBER_EPOCH), of a known member (else UNKNOWN_MEMBER_ID); a join past
group.share.max.size is GROUP_MAX_SIZE_REACHED. A member not heard from for
group.share.session.timeout.ms is removed (`expire`).
"""

from __future__ import annotations

import enum
import hashlib
import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from coordinator.group import share_assignor
from coordinator.group.share_assignor import Assignment

NONE = 0
INVALID_REQUEST = 42
UNKNOWN_MEMBER_ID = 25
GROUP_MAX_SIZE_REACHED = 81
FENCED_MEMBER_EPOCH = 110
LEAVE_EPOCH = -1
TopicsView = Mapping[str, tuple[uuid.UUID, int]]  # name -> (topic id, partition count)


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ShareConfig:
    """The broker's group.share.* settings (Kafka's names and defaults)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 200
    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    partition_max_record_locks: int = 2_000


@dataclass(slots=True)
class ShareMember:
    member_id: str
    epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    assignment: Assignment = field(default_factory=dict)
    session_deadline_ms: int = 0  # 0: loaded from the log, its session not started yet
    previous_epoch: int = -1


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    metadata_hash: int = 0  # topics_hash of the subscribed topics the target was computed with
    # the topics whose share partitions may have durable state (Kafka's initialized topics),
    # name -> (topic id, partition count): every topic the group was assigned, or had offsets
    # altered, until its offsets are deleted
    state_topics: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topics(self) -> frozenset[str]:
        return frozenset().union(*(m.subscribed_topic_names for m in self.members.values()))


@dataclass(frozen=True, slots=True)
class ShareHeartbeatIn:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None  # None: unchanged
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareHeartbeatOut:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged (or an error)


def heartbeat(
    group: ShareGroup, beat: ShareHeartbeatIn, topics: TopicsView, config: ShareConfig,
    now_ms: int,
) -> ShareHeartbeatOut:  # fmt: skip
    """One ShareGroupHeartbeat: join, heartbeat or leave; changes `group` in place."""
    if not beat.member_id:
        return ShareHeartbeatOut(INVALID_REQUEST, "MemberId can't be empty.")
    member = group.members.get(beat.member_id)
    if beat.member_epoch == LEAVE_EPOCH:
        if member is None:
            return _unknown(beat)
        remove(group, beat.member_id, topics)
        return ShareHeartbeatOut(NONE, None, beat.member_id, LEAVE_EPOCH)
    if beat.member_epoch == 0:
        if not beat.subscribed_topic_names:
            return ShareHeartbeatOut(
                INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
            )
        if member is None and len(group.members) >= config.max_size:
            why = f"The share group has reached its maximum capacity of {config.max_size} members."
            return ShareHeartbeatOut(GROUP_MAX_SIZE_REACHED, why)
        joined = member is None
        if member is None:
            member = group.members[beat.member_id] = ShareMember(beat.member_id)
        member.epoch = 0  # a rejoin gets its assignment in full
    elif member is None:
        return _unknown(beat)
    elif beat.member_epoch != member.epoch:
        return ShareHeartbeatOut(
            FENCED_MEMBER_EPOCH,
            f"The share group member has a different epoch ({beat.member_epoch}) than the one "
            f"known by the group coordinator ({member.epoch}).",
        )
    else:
        joined = False
    changed = _update_member(member, beat) or joined
    member.session_deadline_ms = now_ms + config.session_timeout_ms
    _refresh_target(group, topics, changed)
    assignment = None
    if member.epoch != group.assignment_epoch:
        member.previous_epoch, member.epoch = member.epoch, group.assignment_epoch
        member.assignment = group.target.get(member.member_id, {})
        assignment = member.assignment
    return ShareHeartbeatOut(
        NONE, None, member.member_id, member.epoch, config.heartbeat_interval_ms, assignment
    )


def _unknown(beat: ShareHeartbeatIn) -> ShareHeartbeatOut:
    return ShareHeartbeatOut(
        UNKNOWN_MEMBER_ID, f"Member {beat.member_id} is not a member of group {beat.group_id}."
    )


def _update_member(member: ShareMember, beat: ShareHeartbeatIn) -> bool:
    """Take the heartbeat's member fields; whether its subscription changed."""
    if beat.rack_id is not None:
        member.rack_id = beat.rack_id
    member.client_id, member.client_host = beat.client_id, beat.client_host
    names = beat.subscribed_topic_names
    if names is None or frozenset(names) == member.subscribed_topic_names:
        return False
    member.subscribed_topic_names = frozenset(names)
    return True


def _refresh_target(group: ShareGroup, topics: TopicsView, changed: bool) -> None:
    """Bump the group epoch (once) when the membership changed (`changed`) or a subscribed
    topic did, and compute the target assignment when it is older than the group epoch."""
    seen = {t: topics[t] for t in sorted(group.subscribed_topics()) if t in topics}
    hashed = topics_hash(seen)
    if hashed != group.metadata_hash:
        group.metadata_hash = hashed
        group.state_topics.update(seen)
        changed = True
    if changed:
        group.group_epoch += 1
    if group.assignment_epoch == group.group_epoch:
        return
    subscriptions = {m.member_id: m.subscribed_topic_names for m in group.members.values()}
    group.target = share_assignor.assign(subscriptions, seen)
    group.assignment_epoch = group.group_epoch


def topics_hash(topics: TopicsView) -> int:
    """The subscribed topics' metadata as one signed 64-bit number, 0 for none: ShareGroupMetadata's
    MetadataHash. Kafka hashes each topic's id, name, partition count and racks with XXH3 and
    combines them; odradek hashes the ids, names and counts with BLAKE2b, which serves the same
    purpose (a change of the subscribed topics is a new hash) without being Kafka's number."""
    if not topics:
        return 0
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(topics):
        topic_id, count = topics[name]
        raw = name.encode()
        h.update(topic_id.bytes + struct.pack(">H", len(raw)) + raw + struct.pack(">i", count))
    return int(struct.unpack(">q", h.digest())[0]) or 1


def remove(group: ShareGroup, member_id: str, topics: TopicsView) -> None:
    """A member leaves (or is expired): the group epoch moves and the target is recomputed."""
    if group.members.pop(member_id, None) is not None:
        group.target.pop(member_id, None)
        _refresh_target(group, topics, True)


def expire(
    group: ShareGroup, topics: TopicsView, now_ms: int, session_timeout_ms: int
) -> list[str]:
    """Remove the members whose session passed; their ids. A member loaded from the log
    (deadline 0) starts its session now."""
    for m in group.members.values():
        if m.session_deadline_ms == 0:
            m.session_deadline_ms = now_ms + session_timeout_ms
    gone = [m.member_id for m in group.members.values() if m.session_deadline_ms <= now_ms]
    for member_id in gone:
        remove(group, member_id, topics)
    return gone

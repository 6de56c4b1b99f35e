"""A KIP-848 consumer group (`group.protocol=consumer`): one job, the group's state and the
words its operations speak (Kafka's ConsumerGroup, ConsumerGroupMember).

State: the group epoch (bumped by every membership or subscription change), the target
assignment and its epoch (the server assignor's output for a group epoch), and per member its
subscription and its current assignment (reconcile.py: member epoch, assigned partitions,
partitions pending revocation, MemberState; a classic-protocol member inside the group, during
an online migration, also its `ClassicMeta`). Partitions are named by topic id (KIP-516). Here
too: the broker's group.consumer.* settings (`ConsumerConfig`), the cluster's topics as the
coordinator sees them (`Topics`), a heartbeat's request and response (`HeartbeatIn`,
`HeartbeatOut`), Kafka's error codes, and `check_commit` (may a member commit or fetch).

The pure operations live beside it, each over this state: consumer_heartbeat.py (join,
heartbeat, leave, the fencing `tick`), consumer_target.py (subscriptions and the target
assignment), consumer_replay.py (the records of a change, and `replay`, which applies them:
memory is always what replaying the log gives).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.group.consumer_states import GroupState, MemberState, group_state
from coordinator.group.reconcile import Reconciled
from coordinator.group.server_assignors import DEFAULT_ASSIGNOR
from protocol.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InvalidRequestError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)

TopicId = uuid.UUID
Assignment = Mapping[TopicId, frozenset[int]]
NONE = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
# Kafka's codes (protocol/errors.py; Kafka's 128 has no row there, kafka-python lacks it)
UNKNOWN_MEMBER_ID = UnknownMemberIdError.code
INVALID_REQUEST = InvalidRequestError.code
GROUP_ID_NOT_FOUND = GroupIdNotFoundError.code
GROUP_MAX_SIZE_REACHED = GroupMaxSizeReachedError.code
FENCED_MEMBER_EPOCH = FencedMemberEpochError.code
UNRELEASED_INSTANCE_ID = UnreleasedInstanceIdError.code
UNSUPPORTED_ASSIGNOR = UnsupportedAssignorError.code
STALE_MEMBER_EPOCH = StaleMemberEpochError.code
ILLEGAL_GENERATION = IllegalGenerationError.code
INVALID_REGULAR_EXPRESSION = 128


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """The broker's group.consumer.* settings."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default
    # Kafka's group.consumer.migration.policy: which online conversions of a non-empty group
    # between the classic and the consumer protocol are allowed (migration.py)
    migration_policy: str = "bidirectional"


@dataclass(frozen=True, slots=True)
class ClassicMeta:
    """A classic-protocol member of a consumer group (Kafka's ClassicMemberMetadata, tag 0 of
    its ConsumerGroupMemberMetadata record): its session timeout and its JoinGroup protocols
    (assignor name, ConsumerProtocol Subscription bytes), in order of preference."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    def value(self) -> dict[str, Any]:
        return {"session_timeout_ms": self.session_timeout_ms,
                "supported_protocols": [list(p) for p in self.protocols]}  # fmt: skip

    @staticmethod
    def of(value: Mapping[str, Any] | None) -> ClassicMeta | None:
        if value is None:
            return None
        protocols = tuple((str(n), bytes(m)) for n, m in value["supported_protocols"])
        return ClassicMeta(int(value["session_timeout_ms"]), protocols)


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    assignment: Reconciled = field(default_factory=Reconciled)
    session_deadline_ms: int = 0  # in memory only: now + session timeout at each heartbeat
    revoke_deadline_ms: int = 0  # in memory only: set while UNREVOKED_PARTITIONS
    classic: ClassicMeta | None = None  # set: the member speaks the classic protocol

    @property
    def epoch(self) -> int:
        return self.assignment.member_epoch

    def metadata_value(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed_topic_names": list(self.subscribed_topic_names),
            "subscribed_topic_regex": self.subscribed_topic_regex,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "server_assignor": self.server_assignor,
            "classic_member_metadata": None if self.classic is None else self.classic.value(),
        }

    def session_timeout_ms(self, config: ConsumerConfig) -> int:
        """A classic member's own session timeout, else the group's."""
        classic = self.classic
        return config.session_timeout_ms if classic is None else classic.session_timeout_ms


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    target_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)  # member -> target partitions
    # the partition metadata last written: topic id -> (name, partitions)
    subscription: dict[TopicId, tuple[str, int]] = field(default_factory=dict)
    deleted: bool = False

    @property
    def state(self) -> GroupState:
        if self.deleted:
            return GroupState.DEAD
        stable = all(
            m.assignment.state is MemberState.STABLE and m.epoch == self.target_epoch
            for m in self.members.values()
        )
        return group_state(len(self.members), self.group_epoch, self.target_epoch, stable)

    def owners(self) -> dict[tuple[TopicId, int], str]:
        """Partition -> the member owning it (assigned or pending revocation)."""
        out: dict[tuple[TopicId, int], str] = {}
        for m in self.members.values():
            for part in (m.assignment.assigned, m.assignment.pending_revocation):
                for t, ps in part.items():
                    for p in ps:
                        out[(t, p)] = m.member_id
        return out

    def preferred_assignor(self, config: ConsumerConfig) -> str:
        asked = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        if not asked:
            return config.assignors[0] if config.assignors else DEFAULT_ASSIGNOR
        return sorted(asked.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


@dataclass(frozen=True, slots=True)
class Topics:
    """The cluster's topics as the coordinator sees them (injected): name -> (id, partitions)."""

    by_name: Mapping[str, tuple[TopicId, int]]

    def name_of(self, topic_id: TopicId) -> str | None:
        return next((n for n, (i, _) in self.by_name.items() if i == topic_id), None)


@dataclass(frozen=True, slots=True)
class HeartbeatIn:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None  # None: not sent (unchanged since the last heartbeat)
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatOut:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def check_commit(group: ConsumerGroup, member_id: str, member_epoch: int) -> tuple[int, str | None]:
    """Kafka's ConsumerGroup.validateOffsetCommit / validateOffsetFetch: a commit from outside
    the group (epoch < 0: an admin, or a consumer that assign()s, which may send its own
    member id) only into a group without members (commit) or always (fetch is checked by
    caller); otherwise the member must be known and at its current epoch (a classic member
    inside the group: its generation, ILLEGAL_GENERATION otherwise)."""
    if member_epoch < 0 and not group.members:
        return NONE, None
    member = group.members.get(member_id)
    if member is None:
        return UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
    if member_epoch != member.epoch and member.classic is not None:  # Kafka's answer to them
        return ILLEGAL_GENERATION, (
            f"The generation {member_epoch} is not the member's current one ({member.epoch})."
        )
    if member_epoch != member.epoch:
        return STALE_MEMBER_EPOCH, (
            f"The member epoch {member_epoch} is stale: the member's epoch is {member.epoch}."
        )
    return NONE, None

"""Online migration of a non-empty group between the classic and the consumer (KIP-848)
protocol, as Kafka 4.x's GroupMetadataManager does it: pure functions over the group's state.

Policy (`group.consumer.migration.policy`, POLICIES below) says which ways are allowed.

Upgrade (`to_consumer`, Kafka's convertToConsumerGroup): a ConsumerGroupHeartbeat joining a
classic group with members whose protocol type is "consumer". Each classic member becomes a
consumer-group member at epoch = the generation, STABLE, carrying its classic metadata (session
timeout, protocols), its subscription (decoded from the chosen protocol's Subscription bytes)
and, as current and target assignment, what its last SyncGroup gave it. The records: a
tombstone of the classic GroupMetadata, then the consumer-group records (each member's
metadata, the epoch, each target, the target epoch, each current assignment). The joining
member then joins as usual: the group epoch is bumped and the server assignor runs; the
classic members learn of it from their next Heartbeat (REBALANCE_IN_PROGRESS) and rejoin
(classic_in_consumer.py).

Downgrade (`to_classic`, Kafka's convertToClassicGroup): when a member leaves or is fenced and
every other member speaks the classic protocol (and there is one), the consumer group's records
are tombstoned and a classic GroupMetadata is written: generation = the group epoch, the
protocol all of them support that most prefer, the first member as leader, each member's
target assignment as ConsumerProtocol Assignment bytes. The service then starts a rebalance
(PreparingRebalance), so the members rejoin as a classic group.

Memory is always what replaying these records gives: `group.clear_classic` is both what the
upgrade does to the classic part of the group and what replaying its tombstone does when the
group's offsets live on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coordinator.group import consumer_records as cr
from coordinator.group.classic import choose_protocol
from coordinator.group.consumer_group import (
    Assignment,
    ClassicMeta,
    ConsumerConfig,
    ConsumerGroup,
    ConsumerMember,
    Topics,
)
from coordinator.group.consumer_replay import (
    apply_records,
    current_record,
    delete_records,
    epoch_record,
    make_record,
)
from coordinator.group.group import Group, Member, clear_classic, group_record
from coordinator.group.reconcile import Reconciled
from coordinator.group.records import CoordinatorRecord, GroupKey
from protocol.errors import UsageError
from protocol.kafka.consumer_protocol import (
    assigned_partitions,
    decode_subscription,
    encode_assignment,
)

PROTOCOL_TYPE = "consumer"  # the embedded protocol both kinds share (Kafka's ConsumerProtocol)


@dataclass(frozen=True, slots=True)
class Policy:
    upgrade: bool  # classic -> consumer
    downgrade: bool  # consumer -> classic
    does: str


POLICIES: dict[str, Policy] = {
    "bidirectional": Policy(True, True, "both ways (Kafka's default)"),
    "upgrade": Policy(True, False, "classic to consumer only"),
    "downgrade": Policy(False, True, "consumer to classic only"),
    "disabled": Policy(False, False, "neither: a non-empty group keeps its kind"),
}


def policy(name: str) -> Policy:
    return POLICIES.get(name.lower(), POLICIES["bidirectional"])


def check_policy(name: str) -> str:
    """The broker setting, checked when the config loads (UsageError: one line)."""
    if name.lower() not in POLICIES:
        known = ", ".join(POLICIES)
        raise UsageError(f"group_consumer_migration_policy {name!r} is not one of {known} "
                         "(Kafka's group.consumer.migration.policy)")  # fmt: skip
    return name.lower()


# ----- upgrade: classic -> consumer ---------------------------------------------------------


def upgrade_refusal(group: Group, config: ConsumerConfig) -> str | None:
    """Why a non-empty classic group may not become a consumer group (None: it may), the
    checks of Kafka's validateOnlineUpgrade, then that every member's subscription parses."""
    gid = group.group_id
    if not policy(config.migration_policy).upgrade:
        return (f"Group {gid} is a classic group with members, and the online upgrade to the "
                f"consumer protocol is disabled (group_consumer_migration_policy="
                f"{config.migration_policy}).")  # fmt: skip
    if group.protocol_type != PROTOCOL_TYPE:
        return (f"Group {gid} is a classic group with members of protocol type "
                f"{group.protocol_type or 'odradek (native)'!r}, not 'consumer': it cannot be "
                "upgraded to the consumer protocol.")  # fmt: skip
    if len(group.members) > config.max_size:
        return (f"Group {gid} has {len(group.members)} classic members, more than "
                f"group_consumer_max_size {config.max_size}: it cannot be upgraded.")  # fmt: skip
    for m in group.members.values():
        if decode_subscription(m.metadata_for(group.strategy)) is None:
            return (f"Cannot upgrade the classic group {gid} to consumer group because the "
                    "embedded consumer protocol is malformed.")  # fmt: skip
    return None


def to_consumer(
    group: Group, topics: Topics, now_ms: int, config: ConsumerConfig
) -> tuple[ConsumerGroup, list[CoordinatorRecord]]:
    """The consumer group the classic `group` becomes, and the records saying so (already
    applied to the new group); `group`'s classic part is cleared. `upgrade_refusal` first."""
    gid = group.group_id
    consumer = ConsumerGroup(gid)
    epoch = group.generation
    metadata, targets, currents = [], [], []
    for m in group.members.values():
        sub = decode_subscription(m.metadata_for(group.strategy))
        assert sub is not None  # upgrade_refusal checked it
        assigned = by_id(assigned_partitions(m.assignment_bytes), topics)
        member = ConsumerMember(
            m.member_id, m.instance_id, sub.rack_id, m.client_id, m.client_host,
            tuple(sorted(sub.topics)), None, m.rebalance_timeout_ms, None,
            classic=ClassicMeta(m.session_timeout_ms, tuple(m.protocols)),
        )  # fmt: skip
        metadata.append(make_record(cr.MEMBER_METADATA, gid, member.metadata_value(), m.member_id))
        targets.append(make_record(cr.TARGET_MEMBER, gid, {"topic_partitions": assigned},
                                   m.member_id))  # fmt: skip
        reconciled = Reconciled(member_epoch=epoch, previous_member_epoch=epoch, assigned=assigned)
        currents.append(current_record(gid, m.member_id, reconciled))
    target_epoch = make_record(cr.TARGET_METADATA, gid, {"assignment_epoch": epoch})
    records = [*metadata, epoch_record(gid, epoch), *targets, target_epoch, *currents]
    apply_records(consumer, records, now_ms, config)
    clear_classic(group)
    return consumer, [CoordinatorRecord(GroupKey(gid), None), *records]


def by_id(partitions: list[tuple[str, int]], topics: Topics) -> dict[Any, frozenset[int]]:
    """Named partitions by topic id (a topic the cluster no longer has is left out)."""
    out: dict[Any, set[int]] = {}
    for name, p in partitions:
        found = topics.by_name.get(name)
        if found is not None and 0 <= p < found[1]:
            out.setdefault(found[0], set()).add(p)
    return {t: frozenset(ps) for t, ps in out.items()}


# ----- downgrade: consumer -> classic -------------------------------------------------------


def downgrade_due(consumer: ConsumerGroup, leaving_id: str, config: ConsumerConfig,
                  classic_max_size: int) -> bool:  # fmt: skip
    """Kafka's validateOnlineDowngradeWithFencedMember: `leaving_id` goes, and every other
    member (there is one) speaks the classic protocol, the policy allows it and they fit a
    classic group."""
    others = [m for mid, m in consumer.members.items() if mid != leaving_id]
    if not others or any(m.classic is None for m in others):
        return False
    return policy(config.migration_policy).downgrade and len(others) <= classic_max_size


def to_classic(
    consumer: ConsumerGroup, leaving_id: str, names: Mapping[Any, str]
) -> tuple[list[CoordinatorRecord], dict[str, Any]]:
    """The records converting the consumer group into a classic one without `leaving_id`:
    its consumer records tombstoned, then the classic GroupMetadata (its value returned too,
    for the service to load as replay would). `names`: topic id -> name."""
    members: dict[str, Member] = {}
    for mid, m in consumer.members.items():
        if mid == leaving_id or m.classic is None:
            continue
        members[mid] = Member(
            mid, m.client_id, m.classic.session_timeout_ms, m.rebalance_timeout_ms, (), None,
            client_host=m.client_host, protocols=list(m.classic.protocols),
            instance_id=m.instance_id,
        )  # fmt: skip
    classic = Group(consumer.group_id, protocol_type=PROTOCOL_TYPE, members=members)
    classic.generation = consumer.group_epoch
    classic.strategy = choose_protocol(members.values())
    classic.leader_id = next(iter(members), None)
    for mid, cm in members.items():
        sub = decode_subscription(cm.metadata_for(classic.strategy))
        target = _named(consumer.target.get(mid, {}), names)
        cm.assignment_bytes = encode_assignment(target, sub.version if sub else 0)
    record = group_record(classic)
    assert record.value is not None
    return [*delete_records(consumer), record], record.value


def _named(assignment: Assignment, names: Mapping[Any, str]) -> list[tuple[str, int]]:
    return sorted((names[t], p) for t, ps in assignment.items() if t in names for p in ps)

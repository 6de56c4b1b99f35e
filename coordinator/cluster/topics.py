"""Topic administration through ZooKeeper, as any broker does it for CreateTopics/DeleteTopics/
DescribeConfigs (the controller does the rest when it sees the znodes change).

- create: validate, place replicas (coordinator.cluster.placement) unless an assignment is given
  (CreateTopics' manual one is checked first by `manual_assignment`, with Kafka's rules), then
  write /config/topics/<t> and /brokers/topics/<t> in one ZooKeeper transaction (so a topic never
  exists without its config); the controller's watch on /brokers/topics elects the leaders. The
  assignment znode carries a fresh topic id (KIP-516, protocol/topic_ids.py), as Kafka 2.8+
  writes it; every later rewrite of that znode keeps the id.
- delete: create /admin/delete_topics/<t>; the controller stops the replicas, removes the
  topic's znodes and then the marker.
- add partitions: validate (`new_partitions`), then set /brokers/topics/<t> to the old
  assignment plus the new partitions, conditionally on the version read (a reassignment may
  write it too); the controller's data watch on that znode elects the new partitions' leaders.
- read: configs, assignments, partition states, the topic list.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Collection, Mapping, Sequence

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.placement import MAX_PARTITIONS, assign_added_partitions, assign_replicas
from coordinator.cluster.zk import OpCreate, OpSet, ZkBadVersion, ZkClient, ZkNodeExists, ZkNoNode
from coordinator.cluster.zk_paths import LeaderIsrState, TopicAssignment, TopicConfig
from protocol.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    for_name,
)
from protocol.topic_ids import new_topic_id

TOPIC_NAME_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")
InvalidReplicaAssignmentError = for_name("INVALID_REPLICA_ASSIGNMENT")


def validate_topic_name(name: str) -> None:
    if name in (".", "..") or not TOPIC_NAME_RE.fullmatch(name):
        raise InvalidTopicError(
            f"topic name {name!r} is invalid: use 1-249 of [a-zA-Z0-9._-], not '.' or '..'"
        )


def validate_assignment(assignment: dict[int, list[int]]) -> None:
    """Partitions 0..n-1, each with a non-empty replica list of distinct brokers, all of one
    length (the replication factor)."""
    if not assignment:
        raise InvalidPartitionsError("a topic needs at least one partition")
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError(
            f"partitions must be numbered 0..{len(assignment) - 1}: {sorted(assignment)}"
        )
    sizes = {len(r) for r in assignment.values()}
    if 0 in sizes or len(sizes) != 1:
        raise InvalidReplicationFactorError(
            f"every partition needs the same non-zero number of replicas: {assignment}"
        )
    for p, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(f"partition {p} repeats a broker: {replicas}")


def manual_assignment(
    assignments: Sequence[tuple[int, Sequence[int]]],
    num_partitions: int,
    replication_factor: int,
    broker_ids: Collection[int],
) -> dict[int, list[int]]:
    """CreateTopics' replica assignment, checked as Kafka's controller checks it
    (ReplicationControlManager.createTopic), in its order and with its messages: both counts
    -1 (else INVALID_REQUEST); then, partition by partition as given, no partition twice, a
    non-empty replica list of registered brokers (`broker_ids`), none twice, as many replicas
    as the partitions before; then partitions 0..n-1 (INVALID_REPLICA_ASSIGNMENT for the rest).
    Returns partition -> replicas (preferred leader first)."""
    if replication_factor != -1:
        raise InvalidRequestError(
            "A manual partition assignment was specified, but replication factor was not set to -1."
        )
    if num_partitions != -1:
        raise InvalidRequestError(
            "A manual partition assignment was specified, but numPartitions was not set to -1."
        )
    if len(assignments) > MAX_PARTITIONS:
        raise InvalidPartitionsError(
            f"number of partitions must be at most {MAX_PARTITIONS}, not {len(assignments)}"
        )
    out: dict[int, list[int]] = {}
    rf: int | None = None
    for partition, replicas in assignments:
        if partition in out:
            raise InvalidReplicaAssignmentError(
                f"Found multiple manual partition assignments for partition {partition}"
            )
        _check_replicas(list(replicas), rf, broker_ids)
        rf = len(replicas)
        out[partition] = list(replicas)
    if sorted(out) != list(range(len(out))):
        raise InvalidReplicaAssignmentError(
            "partitions should be a consecutive 0-based integer sequence"
        )
    return dict(sorted(out.items()))


def _check_replicas(replicas: list[int], rf: int | None, broker_ids: Collection[int]) -> None:
    """Kafka's validateManualPartitionAssignment (brokers looked at in id order)."""
    if not replicas:
        raise InvalidReplicaAssignmentError(
            "The manual partition assignment includes an empty replica list."
        )
    previous = None
    for broker in sorted(replicas):
        if broker not in broker_ids:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes broker {broker}, but no such broker "
                "is registered."
            )
        if broker == previous:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes the broker {broker} more than once."
            )
        previous = broker
    if rf is not None and len(replicas) != rf:
        raise InvalidReplicaAssignmentError(
            f"The manual partition assignment includes a partition with {len(replicas)} "
            f"replica(s), but this is inconsistent with previous partitions, which have {rf} "
            "replica(s)."
        )


async def ensure_layout(zk: ZkClient) -> None:
    """Create the persistent parents (/brokers/ids, /brokers/topics, ...) if missing."""
    for path in paths.PERSISTENT_PATHS:
        if await zk.exists(path) is None:
            await zk.ensure_path(path)


async def create_topic(
    zk: ZkClient,
    name: str,
    num_partitions: int,
    replication_factor: int,
    configs: dict[str, str],
    live_broker_ids: list[int],
    assignment: Mapping[int, Sequence[int]] | None = None,
    topic_id: uuid.UUID | None = None,
) -> dict[int, list[int]]:
    """Write the topic's config and assignment (with `topic_id`, a fresh one by default);
    returns the assignment."""
    validate_topic_name(name)
    placed = (
        assign_replicas(live_broker_ids, num_partitions, replication_factor)
        if assignment is None
        else {p: list(replicas) for p, replicas in assignment.items()}
    )
    validate_assignment(placed)
    await ensure_layout(zk)
    if await zk.exists(paths.delete_topic_path(name)) is not None:
        raise TopicAlreadyExistsError(f"topic {name!r} is marked for deletion")
    config_data = TopicConfig(dict(configs)).encode()
    topic_data = TopicAssignment(placed, topic_id or new_topic_id()).encode()
    config_path = paths.topic_config_path(name)
    # A config left by an interrupted delete is overwritten in the same transaction.
    config_op = (
        OpSet(config_path, config_data)
        if await zk.exists(config_path) is not None
        else OpCreate(config_path, config_data)
    )
    try:
        await zk.transaction([config_op, OpCreate(paths.topic_path(name), topic_data)])
    except ZkNodeExists as exc:
        raise TopicAlreadyExistsError(f"topic {name!r} already exists") from exc
    return placed


async def delete_topic(zk: ZkClient, name: str) -> None:
    """Mark the topic for deletion (idempotent); the controller does the work."""
    if await zk.exists(paths.topic_path(name)) is None:
        raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
    with contextlib.suppress(ZkNodeExists):  # already marked: deleting is idempotent
        await zk.create(paths.delete_topic_path(name), b"", makepath=True)


def new_partitions(
    existing: dict[int, list[int]],
    count: int,
    assignments: list[list[int]] | None,
    live_broker_ids: list[int],
) -> dict[int, list[int]]:
    """The partitions to add to a topic assigned `existing` so that it has `count`: the given
    `assignments` (one replica list per added partition, checked as Kafka checks them) or,
    without them, placed by coordinator.cluster.placement."""
    have = len(existing)
    if sorted(existing) != list(range(have)) or have == 0:
        raise InvalidReplicaAssignmentError(f"the topic's partitions are not 0..n-1: {existing}")
    if count == have:
        raise InvalidPartitionsError(f"topic already has {have} partitions")
    if count < have:
        raise InvalidPartitionsError(
            f"topic currently has {have} partitions, {count} would not be an increase"
        )
    if assignments is None:
        return assign_added_partitions(live_broker_ids, existing, count)
    if len(assignments) != count - have:
        raise InvalidReplicaAssignmentError(
            f"increasing the number of partitions by {count - have} "
            f"but {len(assignments)} assignments provided"
        )
    rf = len(existing[0])
    added = {have + i: list(replicas) for i, replicas in enumerate(assignments)}
    for p, replicas in added.items():
        if len(replicas) != rf:
            raise InvalidReplicaAssignmentError(
                f"inconsistent replication factor between partitions: partition 0 has {rf}, "
                f"partition {p} has {len(replicas)}"
            )
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"duplicate brokers not allowed in replica assignment: {replicas}"
            )
        unknown = sorted(set(replicas) - set(live_broker_ids))
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}"
            )
    return added


ADD_PARTITIONS_ATTEMPTS = 5  # version conflicts (a reassignment writing too) before giving up


async def add_partitions(
    zk: ZkClient,
    name: str,
    count: int,
    assignments: list[list[int]] | None,
    live_broker_ids: list[int],
    validate_only: bool = False,
) -> dict[int, list[int]]:
    """Add partitions so that the topic has `count`; returns the added ones' replicas.
    UnknownTopicOrPartitionError, InvalidTopicError (marked for deletion), InvalidPartitions...
    """
    for _ in range(ADD_PARTITIONS_ATTEMPTS):
        try:
            data, version = await zk.get(paths.topic_path(name))
        except ZkNoNode:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist") from None
        if await zk.exists(paths.delete_topic_path(name)) is not None:
            raise InvalidTopicError(f"topic {name!r} is queued for deletion")
        decoded = TopicAssignment.decode(data)
        existing = decoded.partitions
        added = new_partitions(existing, count, assignments, live_broker_ids)
        whole = {**existing, **added}
        validate_assignment(whole)
        if validate_only:
            return added
        try:
            data = TopicAssignment(whole, decoded.topic_id).encode()
            await zk.set(paths.topic_path(name), data, version)
        except ZkBadVersion:
            continue  # written meanwhile: decide again on what is there now
        return added
    raise ZkBadVersion(f"{paths.topic_path(name)} kept changing", paths.topic_path(name))


async def read_topic_config(zk: ZkClient, name: str) -> dict[str, str]:
    """The topic's overrides (not the broker defaults)."""
    try:
        data, _ = await zk.get(paths.topic_config_path(name))
    except ZkNoNode:
        if await zk.exists(paths.topic_path(name)) is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist") from None
        return {}
    return TopicConfig.decode(data).config


async def read_assignment(zk: ZkClient, name: str) -> dict[int, list[int]]:
    try:
        data, _ = await zk.get(paths.topic_path(name))
    except ZkNoNode:
        raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist") from None
    return TopicAssignment.decode(data).partitions


async def read_topic_id(zk: ZkClient, name: str) -> uuid.UUID | None:
    """The topic's id; None for a topic from before ids that the controller has not backfilled."""
    try:
        data, _ = await zk.get(paths.topic_path(name))
    except ZkNoNode:
        raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist") from None
    return TopicAssignment.decode(data).topic_id


async def read_partition_state(
    zk: ZkClient, topic: str, partition: int
) -> tuple[LeaderIsrState, int] | None:
    """The partition's state znode and its version, None before the controller wrote it."""
    try:
        data, version = await zk.get(paths.partition_state_path(topic, partition))
    except ZkNoNode:
        return None
    return LeaderIsrState.decode(data), version


async def list_topics(zk: ZkClient, include_deleting: bool = True) -> list[str]:
    try:
        topics = await zk.get_children(paths.BROKER_TOPICS)
    except ZkNoNode:
        return []
    if include_deleting:
        return topics
    try:
        deleting = set(await zk.get_children(paths.ADMIN_DELETE_TOPICS))
    except ZkNoNode:
        deleting = set()
    return [t for t in topics if t not in deleting]

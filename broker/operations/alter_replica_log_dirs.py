"""AlterReplicaLogDirs (Kafka door only): move replicas between this broker's log directories,
as Kafka's ReplicaManager.alterReplicaLogDirs answers it.

A broker has one log directory (`log.dir`), so the only directory a replica can be asked to go
to is the one it is in: that is a move with nothing to do, and NONE, as Kafka answers a
replica already in the directory asked. Per partition, in Kafka's order: a topic name too long
for the future replica's directory name (`<topic>-<p>.<32 hex>-future` over 255 bytes)
INVALID_TOPIC_EXCEPTION; a directory that is not this broker's (compared as Kafka does, by
absolute path, the path DescribeLogDirs gives) LOG_DIR_NOT_FOUND; an offline directory, or a
partition whose log is offline, KAFKA_STORAGE_ERROR; a partition this broker does not host
REPLICA_NOT_AVAILABLE. A partition named under two directories takes the last (Kafka's map).

ACLs: Alter on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every partition asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import (
    ClusterAuthorizationFailedError,
    InvalidTopicError,
    KafkaStorageError,
    LogDirNotFoundError,
    OdradekError,
    ReplicaNotAvailableError,
)

API = "AlterReplicaLogDirs"
FUTURE_DIR_NAME_MAX_BYTES = 255  # a file name's limit (Kafka's KAFKA-4893 check)
FUTURE_SUFFIX_BYTES = len(".") + 32 + len("-future")  # `.<uuid hex>-future`


@dataclass(frozen=True, slots=True)
class AlterReplicaLogDirs:
    moves: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]  # (path, partitions) as asked


@dataclass(frozen=True, slots=True)
class ReplicaMoved:
    topic: str
    partition: int
    error_code: int


@dataclass(frozen=True, slots=True)
class AlterReplicaLogDirsResult:
    results: tuple[ReplicaMoved, ...]  # one per partition asked, in the order first asked


def run(
    ctx: BrokerContext, session: Session, req: AlterReplicaLogDirs
) -> AlterReplicaLogDirsResult:
    wanted: dict[tuple[str, int], str] = {}
    for path, partitions in req.moves:
        for key in partitions:
            wanted[key] = path  # the last directory named wins, as in Kafka's map
    if not rules.allows(ctx, session, rules.ALTER, rules.CLUSTER, api=API):
        code = ClusterAuthorizationFailedError.code
        return AlterReplicaLogDirsResult(tuple(ReplicaMoved(t, p, code) for t, p in wanted))
    return AlterReplicaLogDirsResult(
        tuple(ReplicaMoved(t, p, _move(ctx, t, p, path)) for (t, p), path in wanted.items())
    )


def _move(ctx: BrokerContext, topic: str, partition: int, path: str) -> int:
    try:
        check_move(ctx, topic, partition, path)
    except OdradekError as exc:
        return exc.code
    return 0


def check_move(ctx: BrokerContext, topic: str, partition: int, path: str) -> None:
    """Raise Kafka's error for moving `topic`-`partition` to `path`; return when the replica
    is there already (the one directory a broker has)."""
    future_name = f"{topic}-{partition}".encode()
    if len(future_name) + FUTURE_SUFFIX_BYTES > FUTURE_DIR_NAME_MAX_BYTES:
        raise InvalidTopicError("The topic name is too long.")
    manager = ctx.replicas.log_manager
    if path != str(manager.log_dir.absolute()):
        raise LogDirNotFoundError(f"Log dir {path} is not found in the config.")
    if manager.offline:
        raise KafkaStorageError(f"Log directory {path} is offline")
    p = ctx.replicas.partitions.get((topic, partition))
    if p is not None and p.storage_failed:
        raise KafkaStorageError(f"Partition {topic}-{partition} is offline")
    log = manager.get(topic, partition)
    if p is None or log is None or log.closed:
        raise ReplicaNotAvailableError(
            f"Replica {ctx.config.broker_id} of {topic}-{partition} is not hosted here"
        )

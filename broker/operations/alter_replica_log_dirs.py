"""AlterReplicaLogDirs (Kafka door only): move replicas between this broker's log directories
(`log.dirs`, KIP-113), as Kafka's ReplicaManager.alterReplicaLogDirs answers it.

NONE starts the move (broker/log/dir_moves.py copies the replica into a future log in the
destination while it keeps serving, then swaps; DescribeLogDirs shows the future replica until
then), or answers a replica already there or already on its way there; asking for the
directory it is in abandons a move under way. Per partition, in Kafka's order: a topic name too
long for the future replica's directory name (`<topic>-<p>.<32 hex>-future` over 255 bytes)
INVALID_TOPIC_EXCEPTION; a directory that is not this broker's (compared as Kafka does, by
absolute path, the path DescribeLogDirs gives) LOG_DIR_NOT_FOUND; an offline destination, a
partition whose log is offline, or a new move while any directory is offline,
KAFKA_STORAGE_ERROR; a partition this broker does not host REPLICA_NOT_AVAILABLE (and the
directory is remembered: the replica is created there when it comes, Kafka's preferred log
dir). A partition named under two directories takes the last (Kafka's map).

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
    """Move `topic`-`partition` to `path`, or raise Kafka's error for it."""
    future_name = f"{topic}-{partition}".encode()
    if len(future_name) + FUTURE_SUFFIX_BYTES > FUTURE_DIR_NAME_MAX_BYTES:
        raise InvalidTopicError("The topic name is too long.")
    destination = ctx.replicas.log_manager.find_dir(path)
    if destination is None:
        raise LogDirNotFoundError(f"Log dir {path} is not found in the config.")
    p = ctx.replicas.partitions.get((topic, partition))
    if p is not None and p.storage_failed:
        raise KafkaStorageError(f"Partition {topic}-{partition} is offline")
    ctx.replicas.moves.request((topic, partition), destination, hosted=p is not None)

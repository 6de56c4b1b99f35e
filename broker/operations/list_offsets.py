"""ListOffsets: per partition, earliest (-2), latest (-1: the high watermark for consumers,
the last stable offset for read_committed ones, the log end for replicas), by timestamp (the
first offset whose timestamp is at or after it), max timestamp (-3, KIP-734), earliest local
(-4: the log start, nothing being tiered), latest tiered (-5) or earliest pending upload
(-6, KIP-1023), both offset -1 as nothing is tiered, all through the
replica manager's lookup (broker/replica_manager.py `list_offset`), which answers the
partition's error (not its leader, a fenced or unknown leader epoch, and OFFSET_NOT_AVAILABLE
from a new leader whose high watermark lags its epoch's start, KIP-207).

ACLs: a topic the principal may not Describe is TOPIC_AUTHORIZATION_FAILED on each of its
partitions. Then, as Kafka's ReplicaManager.fetchOffset: a special timestamp the request's
version cannot carry (-3 before v7, -4 before v8, -5 before v9, -6 before v11: the Kafka
codec gives the version, the native door takes them all), or any other negative timestamp,
is UNSUPPORTED_VERSION on its partition, before the partition's leader is looked up.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import TopicAuthorizationFailedError, UnsupportedVersionError

API = "ListOffsets"
CONSUMER = -1  # the replica id of a client
# The first ListOffsets version that carries each special timestamp (Kafka's ReplicaManager
# timestampMinSupportedVersion): latest, earliest, max (KIP-734), earliest local (KIP-405),
# latest tiered (KIP-1005), earliest pending upload (KIP-1023).
SPECIAL_TIMESTAMP_FROM_VERSION = {-1: 0, -2: 0, -3: 7, -4: 8, -5: 9, -6: 11}


@dataclass(frozen=True, slots=True)
class Asked:
    partition: int
    timestamp: int  # or -1 .. -6, above
    current_leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ListOffsets:
    topics: tuple[tuple[str, tuple[Asked, ...]], ...]
    replica_id: int = CONSUMER
    isolation_level: int = 0  # 1: read_committed
    version: int | None = None  # the Kafka door's request version; None: every timestamp


@dataclass(frozen=True, slots=True)
class Listed:
    partition: int
    error_code: int
    timestamp: int
    offset: int
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ListOffsetsResult:
    topics: tuple[tuple[str, tuple[Listed, ...]], ...]  # as asked


def run(ctx: BrokerContext, session: Session, req: ListOffsets) -> ListOffsetsResult:
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC,
                           (name for name, _ in req.topics), api=API)  # fmt: skip
    code = TopicAuthorizationFailedError.code
    out = []
    for name, asked in req.topics:
        if name in refused:
            out.append((name, tuple(Listed(a.partition, code, -1, -1) for a in asked)))
            continue
        listed = []
        for a in asked:
            if timestamp_unsupported(a.timestamp, req.version):
                listed.append(Listed(a.partition, UnsupportedVersionError.code, -1, -1))
                continue
            error, ts, offset, epoch = ctx.replicas.list_offset(
                req.replica_id, name, a.partition, a.timestamp, a.current_leader_epoch,
                req.isolation_level,
            )  # fmt: skip
            listed.append(Listed(a.partition, error, ts, offset, epoch))
        out.append((name, tuple(listed)))
    return ListOffsetsResult(tuple(out))


def timestamp_unsupported(timestamp: int, version: int | None) -> bool:
    """A negative timestamp that is no special one, or one `version` cannot carry yet."""
    if timestamp >= 0:
        return False
    since = SPECIAL_TIMESTAMP_FROM_VERSION.get(timestamp)
    return since is None or (version is not None and version < since)

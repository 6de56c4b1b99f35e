"""DescribeLogDirs (Kafka door only): this broker's one log directory and the partition logs in
it, as Kafka's ReplicaManager.describeLogDirs.

Every log in the directory that the request names (None: every log), by topic and partition;
`size_bytes` is the bytes of its segments on disk; `offset_lag` is max(HW - log end, 0) for a
partition this broker hosts (so 0 for leaders and followers alike, as Kafka reports current
replicas) and -1 for a log no partition uses. The directory's total and usable bytes are the
volume's, from statvfs (-1 when it cannot be read); a directory that is gone answers
KAFKA_STORAGE_ERROR and no logs. Without Describe on the cluster: CLUSTER_AUTHORIZATION_FAILED
and no directories.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import ClusterAuthorizationFailedError, KafkaStorageError

API = "DescribeLogDirs"
INVALID_OFFSET_LAG = -1
UNKNOWN_BYTES = -1


@dataclass(frozen=True, slots=True)
class DescribeLogDirs:
    partitions: frozenset[tuple[str, int]] | None  # None: every log


@dataclass(frozen=True, slots=True)
class LogDirPartition:
    topic: str
    partition: int
    size_bytes: int
    offset_lag: int


@dataclass(frozen=True, slots=True)
class LogDir:
    error_code: int
    path: str
    partitions: tuple[LogDirPartition, ...]  # by topic and partition
    total_bytes: int = UNKNOWN_BYTES
    usable_bytes: int = UNKNOWN_BYTES


@dataclass(frozen=True, slots=True)
class DescribeLogDirsResult:
    error_code: int
    dirs: tuple[LogDir, ...]


def run(ctx: BrokerContext, session: Session, req: DescribeLogDirs) -> DescribeLogDirsResult:
    if not rules.allows(ctx, session, rules.DESCRIBE, rules.CLUSTER, api=API):
        return DescribeLogDirsResult(ClusterAuthorizationFailedError.code, ())
    log_dir = ctx.replicas.log_manager.log_dir.absolute()
    total, usable = volume_bytes(log_dir)
    if not log_dir.is_dir():
        gone = LogDir(KafkaStorageError.code, str(log_dir), (), total, usable)
        return DescribeLogDirsResult(0, (gone,))
    found = LogDir(0, str(log_dir), describe_partitions(ctx, req.partitions), total, usable)
    return DescribeLogDirsResult(0, (found,))


def describe_partitions(
    ctx: BrokerContext, wanted: Collection[tuple[str, int]] | None
) -> tuple[LogDirPartition, ...]:
    """The logs this broker keeps (those in `wanted`, or all), by topic and partition."""
    out = []
    for plog in ctx.replicas.log_manager.logs():
        key = (plog.topic, plog.partition)
        if plog.closed or (wanted is not None and key not in wanted):
            continue
        p = ctx.replicas.partitions.get(key)
        lag = INVALID_OFFSET_LAG if p is None else max(p.high_watermark - plog.log_end_offset, 0)
        out.append(LogDirPartition(plog.topic, plog.partition, plog.size_bytes, lag))
    return tuple(sorted(out, key=lambda d: (d.topic, d.partition)))


def volume_bytes(path: Path) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `path`; (-1, -1) when it cannot be read."""
    try:
        st = os.statvfs(path)
    except OSError:
        return UNKNOWN_BYTES, UNKNOWN_BYTES
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize

"""DescribeLogDirs (Kafka door only): each of this broker's log directories (`log.dirs`, in
their order, by absolute path) and the partition logs in it, as Kafka's
ReplicaManager.describeLogDirs.

Every log in a directory that the request names (None: every log), by topic and partition;
`size_bytes` is the bytes of its segments on disk; `offset_lag` is max(HW - log end, 0) for a
partition this broker hosts (so 0 for leaders and followers alike, as Kafka reports current
replicas) and -1 for a log no partition uses. A replica being moved (AlterReplicaLogDirs,
broker/log/dir_moves.py) is listed twice: its current log, and its future log in the
destination with `is_future` and, as lag, how far it is behind the current log's end. The
directory's total and usable bytes are the volume's, from statvfs (-1 when it cannot be read);
a directory that is offline (broker/log/dir_failure.py) or gone answers KAFKA_STORAGE_ERROR and
no logs. Without Describe on the cluster: CLUSTER_AUTHORIZATION_FAILED and no directories.
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
    is_future: bool = False


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
    manager = ctx.replicas.log_manager
    dirs = []
    for log_dir in manager.log_dirs:
        if log_dir in manager.failures or not log_dir.is_dir():
            dirs.append(LogDir(KafkaStorageError.code, str(log_dir.absolute()), ()))
            continue
        total, usable = volume_bytes(log_dir)
        found = describe_partitions(ctx, log_dir, req.partitions)
        dirs.append(LogDir(0, str(log_dir.absolute()), found, total, usable))
    return DescribeLogDirsResult(0, tuple(dirs))


def describe_partitions(
    ctx: BrokerContext, log_dir: Path, wanted: Collection[tuple[str, int]] | None
) -> tuple[LogDirPartition, ...]:
    """The logs `log_dir` holds (those in `wanted`, or all), current and future, by topic and
    partition (a current log before a future one)."""
    manager = ctx.replicas.log_manager
    out = []
    for plog in manager.logs():
        key = (plog.topic, plog.partition)
        if (
            plog.closed
            or plog.directory.parent != log_dir
            or (wanted is not None and key not in wanted)
        ):
            continue
        p = ctx.replicas.partitions.get(key)
        lag = INVALID_OFFSET_LAG if p is None else max(p.high_watermark - plog.log_end_offset, 0)
        out.append(LogDirPartition(plog.topic, plog.partition, plog.size_bytes, lag))
    for key, future in manager.futures().items():
        if (
            future.closed
            or future.directory.parent != log_dir
            or (wanted is not None and key not in wanted)
        ):
            continue
        current = manager.get(*key)
        lag = INVALID_OFFSET_LAG
        if current is not None and not current.closed:
            lag = current.log_end_offset - future.log_end_offset
        out.append(LogDirPartition(*key, future.size_bytes, lag, is_future=True))
    return tuple(sorted(out, key=lambda d: (d.topic, d.partition, d.is_future)))


def volume_bytes(path: Path) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `path`; (-1, -1) when it cannot be read."""
    try:
        st = os.statvfs(path)
    except OSError:
        return UNKNOWN_BYTES, UNKNOWN_BYTES
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize

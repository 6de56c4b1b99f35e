"""DescribeLogDirs (35), v1-v4: this broker's one log directory and the partition logs in it.

As Kafka's ReplicaManager.describeLogDirs: every log in the directory that the request names
(null topics: every log), grouped by topic; `partition_size` is the bytes of its segments on
disk; `offset_lag` is max(HW - log end, 0) for a partition this broker hosts (so 0 for leaders
and followers alike, as Kafka reports current replicas) and -1 for a log no partition uses;
`is_future_key` is false (odradek has no AlterReplicaLogDirs). v4's total and usable bytes are
the volume's, from statvfs.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import ClusterAuthorizationFailedError, KafkaStorageError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import DESCRIBE_LOG_DIRS

INVALID_OFFSET_LAG = -1
UNKNOWN_BYTES = -1


@dataclass(frozen=True, slots=True)
class LogDirPartition:
    topic: str
    partition: int
    size_bytes: int
    offset_lag: int


def describe_partitions(
    ctx: BrokerContext, wanted: Collection[tuple[str, int]] | None
) -> list[LogDirPartition]:
    """The logs this broker keeps (those in `wanted`, or all), by topic and partition."""
    out = []
    for plog in ctx.replicas.log_manager.logs():
        key = (plog.topic, plog.partition)
        if plog.closed or (wanted is not None and key not in wanted):
            continue
        p = ctx.replicas.partitions.get(key)
        lag = INVALID_OFFSET_LAG if p is None else max(p.high_watermark - plog.log_end_offset, 0)
        out.append(LogDirPartition(plog.topic, plog.partition, plog.size_bytes, lag))
    return sorted(out, key=lambda d: (d.topic, d.partition))


def volume_bytes(path: Path) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `path`; (-1, -1) when it cannot be read."""
    try:
        st = os.statvfs(path)
    except OSError:
        return UNKNOWN_BYTES, UNKNOWN_BYTES
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    cls = response_class(DESCRIBE_LOG_DIRS, request.header.api_version)
    if not rules.allows(ctx, session, rules.DESCRIBE, rules.CLUSTER, api="DescribeLogDirs"):
        return make(cls, throttle_time=0, error_code=ClusterAuthorizationFailedError.code,
                    results=())  # fmt: skip
    wanted = None
    if req.topics is not None:
        wanted = {(t.topic, p) for t in req.topics for p in t.partitions}
    log_dir = ctx.replicas.log_manager.log_dir.absolute()
    total, usable = volume_bytes(log_dir)
    error = 0 if log_dir.is_dir() else KafkaStorageError.code
    by_topic: dict[str, list[Any]] = {}
    part_cls = nested(cls, "DescribeLogDirsPartition")
    for d in describe_partitions(ctx, wanted) if error == 0 else []:
        by_topic.setdefault(d.topic, []).append(
            make(
                part_cls,
                partition_index=d.partition,
                partition_size=d.size_bytes,
                offset_lag=d.offset_lag,
                is_future_key=False,
            )
        )
    topic_cls = nested(cls, "DescribeLogDirsTopic")
    topics = tuple(make(topic_cls, name=t, partitions=tuple(ps)) for t, ps in by_topic.items())
    result = make(
        nested(cls, "DescribeLogDirsResult"), error_code=error, log_dir=str(log_dir),
        topics=topics, total_bytes=total, usable_bytes=usable,
    )  # fmt: skip
    return make(cls, throttle_time=0, error_code=0, results=(result,))

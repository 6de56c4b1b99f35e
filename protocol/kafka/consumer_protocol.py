"""Kafka's consumer protocol: what a consumer group's members put in JoinGroup's metadata and
the leader in SyncGroup's assignments. The coordinator keeps both opaque; it reads them only to
show and check a group (which topics its members are subscribed to, which partitions each owns).

    subscription = version int16, then ConsumerProtocolSubscription vN (topics [string],
                   user_data bytes, owned_partitions (v1+), generation_id (v2+), rack_id (v3+))
    assignment   = version int16, then ConsumerProtocolAssignment vN (assigned_partitions
                   [topic string, partitions [int32]], user_data bytes)

A version newer than kio knows is read with the newest layout (newer versions only append
fields). Bytes that do not parse give an empty answer, never an exception: these come from
clients.
"""

from __future__ import annotations

import functools
import importlib
import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.schema.consumer_protocol_assignment.v3 import data as assignment_v3
from kio.serial import entity_reader, entity_writer

MAX_VERSION = 3
# A native group's protocol type as Kafka's DescribeGroups and ListGroups show it (a native
# group has none): Kafka tools list native groups with it.
NATIVE_PROTOCOL_TYPE = "odradek"


@functools.cache
def _cls(kind: str, version: int) -> Any:
    module = importlib.import_module(f"kio.schema.{kind}.v{version}.data")
    if kind.endswith("subscription"):
        return module.ConsumerProtocolSubscription
    return module.ConsumerProtocolAssignment


def _read(kind: str, data: bytes) -> Any | None:
    if len(data) < 2:
        return None
    (version,) = struct.unpack_from(">h", data)
    if version < 0:
        return None
    try:
        entity, _ = entity_reader(_cls(kind, min(version, MAX_VERSION)))(data, 2)
    except Exception:
        return None
    return entity


@dataclass(frozen=True, slots=True)
class Subscription:
    """What a classic member's JoinGroup metadata says (for a consumer group it joins)."""

    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, int], ...]  # v1+: the partitions it owns (cooperative)
    rack_id: str | None


def decode_subscription(metadata: bytes) -> Subscription | None:
    """The subscription, or None: the bytes are not a ConsumerProtocol Subscription."""
    entity = _read("consumer_protocol_subscription", metadata)
    if entity is None:
        return None
    tps = getattr(entity, "owned_partitions", ())
    owned = tuple((str(tp.topic), int(p)) for tp in tps for p in tp.partitions)
    rack = getattr(entity, "rack_id", None)
    version = struct.unpack_from(">h", metadata)[0]
    return Subscription(version, tuple(str(t) for t in entity.topics), owned, rack)


def subscribed_topics(metadata: bytes) -> set[str]:
    entity = _read("consumer_protocol_subscription", metadata)
    return set() if entity is None else {str(t) for t in entity.topics}


def assigned_partitions(assignment: bytes) -> list[tuple[str, int]]:
    entity = _read("consumer_protocol_assignment", assignment)
    if entity is None:
        return []
    return sorted(
        (str(tp.topic), int(p)) for tp in entity.assigned_partitions for p in tp.partitions
    )


def encode_assignment(partitions: list[tuple[str, int]], version: int = MAX_VERSION) -> bytes:
    """An assignment, as version `version` (0-3 share one layout; a newer one is written as 3:
    the member's subscription version, as Kafka answers a classic member)."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(partitions):
        by_topic.setdefault(topic, []).append(p)
    tps = tuple(
        assignment_v3.TopicPartition(topic=t, partitions=tuple(ps))  # type: ignore[arg-type]
        for t, ps in by_topic.items()
    )
    entity = assignment_v3.ConsumerProtocolAssignment(assigned_partitions=tps, user_data=None)
    buf = io.BytesIO()
    buf.write(struct.pack(">h", min(max(version, 0), MAX_VERSION)))
    entity_writer(assignment_v3.ConsumerProtocolAssignment)(buf, entity)
    return buf.getvalue()

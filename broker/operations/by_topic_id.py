"""Naming a request's topics by id (Kafka's v13+ Produce, v10+ OffsetCommit, ...: KIP-516),
shared by the operations that take topics so (not an operation itself).

`named_by_id` looks each id up in this broker's metadata cache: a known id gives the topic's
name (the operation then runs by name, and answers each topic under the id it was asked by);
an id no topic has (deleted, re-created under a new id, never known) is set aside with its
partitions, for the operation to answer UNKNOWN_TOPIC_ID (or the refusal Kafka gives first).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar


class _Partition(Protocol):
    @property
    def partition(self) -> int: ...


class _Topic(Protocol):
    @property
    def partitions(self) -> Sequence[_Partition]: ...


class _Names(Protocol):
    def topic_by_id(self, topic_id: uuid.UUID) -> str | None: ...


T = TypeVar("T", bound=_Topic)


@dataclass(slots=True)
class ByTopicId(Generic[T]):
    named: list[tuple[str, T]] = field(default_factory=list)  # (its name, the topic asked)
    ids: dict[str, uuid.UUID] = field(default_factory=dict)  # name -> the id it was asked by
    unknown: list[tuple[uuid.UUID | None, tuple[int, ...]]] = field(default_factory=list)


def named_by_id(
    names: _Names, topic_ids: Sequence[uuid.UUID | None], topics: Sequence[T]
) -> ByTopicId[T]:
    out: ByTopicId[T] = ByTopicId()
    for topic_id, topic in zip(topic_ids, topics, strict=True):
        name = None if topic_id is None else names.topic_by_id(topic_id)
        if name is None or topic_id is None:
            out.unknown.append((topic_id, tuple(p.partition for p in topic.partitions)))
        else:
            out.ids[name] = topic_id
            out.named.append((name, topic))
    return out

"""KIP-848 server-side assignors: `uniform` (the default) and `range`, pure functions.

Input: each member's subscribed topic ids and its current target partitions, and each topic's
partition count. Output: the new target assignment, member id -> {topic id: partitions}.

uniform (Kafka's UniformAssignor): balanced and sticky. A member keeps the partitions of its
current target that still exist and that it is still subscribed to; the partitions nobody keeps
go, one by one, to the subscribed member holding the fewest; then, while some member holds two
or more partitions more than another member subscribed to one of its topics, one of them moves.
With one subscription for all (Kafka's homogeneous case) every member ends with floor or ceil
of partitions / members, having moved as few as possible. The choices are deterministic (topics
by id, partitions by number, ties by member id) but not byte for byte Kafka's.

range (Kafka's RangeAssignor): per topic, the subscribed members sorted by id get contiguous
ranges, the first `partitions % members` one more; so members subscribed to co-partitioned
topics get the same partition numbers of each. It is not sticky (as Kafka's before 3.8).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

TopicId = uuid.UUID
Assignment = dict[TopicId, frozenset[int]]

DEFAULT_ASSIGNOR = "uniform"


@dataclass(frozen=True, slots=True)
class MemberSpec:
    subscribed: frozenset[TopicId]
    current: Mapping[TopicId, frozenset[int]] = field(default_factory=dict)


def _to_assignment(held: set[tuple[TopicId, int]]) -> Assignment:
    out: dict[TopicId, set[int]] = {}
    for t, p in held:
        out.setdefault(t, set()).add(p)
    return {t: frozenset(ps) for t, ps in out.items()}


def uniform(
    members: Mapping[str, MemberSpec], topics: Mapping[TopicId, int]
) -> dict[str, Assignment]:
    held: dict[str, set[tuple[TopicId, int]]] = {m: set() for m in members}
    taken: set[tuple[TopicId, int]] = set()
    for mid in sorted(members):  # stickiness: keep what is still valid
        spec = members[mid]
        for t, parts in spec.current.items():
            if t in spec.subscribed and t in topics:
                for p in parts:
                    if p < topics[t] and (t, p) not in taken:
                        held[mid].add((t, p))
                        taken.add((t, p))
    for t in sorted(topics, key=str):
        eligible = sorted(m for m in members if t in members[m].subscribed)
        if not eligible:
            continue
        for p in range(topics[t]):
            if (t, p) not in taken:
                best = min(eligible, key=lambda m: (len(held[m]), m))
                held[best].add((t, p))
                taken.add((t, p))
    _balance(members, held)
    return {m: _to_assignment(held[m]) for m in members}


def _balance(members: Mapping[str, MemberSpec], held: dict[str, set[tuple[TopicId, int]]]) -> None:
    """Move one partition at a time from a member to one holding at least two fewer that is
    subscribed to its topic; each move narrows the spread, so this ends (bounded anyway)."""
    total = sum(len(h) for h in held.values())
    for _ in range(total * max(len(members), 1) + 1):
        moved = False
        for donor in sorted(held, key=lambda m: (-len(held[m]), m)):
            for tp in sorted(held[donor], key=lambda x: (str(x[0]), -x[1])):
                takers = [
                    m
                    for m in held
                    if tp[0] in members[m].subscribed and len(held[m]) + 1 < len(held[donor])
                ]
                if takers:
                    taker = min(takers, key=lambda m: (len(held[m]), m))
                    held[donor].discard(tp)
                    held[taker].add(tp)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


def range_assignor(
    members: Mapping[str, MemberSpec], topics: Mapping[TopicId, int]
) -> dict[str, Assignment]:
    out: dict[str, dict[TopicId, frozenset[int]]] = {m: {} for m in members}
    for t in sorted(topics, key=str):
        eligible = sorted(m for m in members if t in members[m].subscribed)
        if not eligible:
            continue
        n, extra = divmod(topics[t], len(eligible))
        start = 0
        for i, mid in enumerate(eligible):
            count = n + (1 if i < extra else 0)
            if count:
                out[mid][t] = frozenset(range(start, start + count))
            start += count
    return out


ASSIGNORS = {"uniform": uniform, "range": range_assignor}

"""The share groups' server assignor (KIP-932, Kafka's `SimpleAssignor`, "simple"): a pure
function from the members' subscriptions and the topics' partition counts to each member's
partitions, where several members may share one partition.

Per subscribed topic, over the members subscribed to it (sorted by member id) and its
partitions:
- as many members as partitions or more: member i gets partition i mod P, so every partition
  is shared by about M/P members and each member has one partition of the topic;
- fewer members than partitions: partition p goes to member p mod M, so each partition has
  exactly one member and the members' counts differ by at most one.
A topic the cluster does not know (or with no partitions) assigns nothing. The answer is the
same for the same input (no randomness); it is not sticky: share groups have no revocation
step, so a partition moving costs the member only its next fetch.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

NAME = "simple"
Assignment = dict[uuid.UUID, frozenset[int]]


def assign(
    subscriptions: Mapping[str, frozenset[str]],
    topics: Mapping[str, tuple[uuid.UUID, int]],
) -> dict[str, Assignment]:
    """Each member's partitions by topic id. `subscriptions`: member id -> topic names;
    `topics`: topic name -> (topic id, partition count) of the topics the cluster has."""
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in subscriptions}
    names = sorted({t for subscribed in subscriptions.values() for t in subscribed})
    for name in names:
        if name not in topics or topics[name][1] <= 0:
            continue
        topic_id, count = topics[name]
        members = sorted(m for m, subscribed in subscriptions.items() if name in subscribed)
        if len(members) >= count:
            pairs = [(m, i % count) for i, m in enumerate(members)]
        else:
            pairs = [(members[p % len(members)], p) for p in range(count)]
        for member, partition in pairs:
            out[member].setdefault(topic_id, set()).add(partition)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}

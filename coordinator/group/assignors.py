"""Partition assignors: pure functions from subscriptions to assignments.

    assign(subscriptions, partitions_per_topic, current) -> {member: [(topic, partition), ...]}

`subscriptions` maps each member id to the topics it subscribes to; `partitions_per_topic` gives
each topic's partition count (topics missing from it are skipped: they do not exist yet);
`current` is the previous assignment (only Sticky reads it). Every member appears in the
result, possibly with no partitions; every partition of a subscribed topic goes to exactly one
member that subscribes to it. Members are ordered by member id everywhere ("consumers sorted").

- range (seed 004, RangeAssignor): per topic, its consumers sorted; each takes
  partitions // consumers, and the first partitions % consumers take one extra.
- roundrobin (seed 004, RoundRobinAssignor): all partitions sorted by (topic, partition) dealt
  over all consumers sorted, in a circle, skipping consumers not subscribed to the topic.
- sticky (seed 004, StickyAssignor): balanced to within one partition, and keeping as many
  current assignments as that allows, so a leaving consumer's partitions move and no others.
- contiguous (seed 000's high-level consumer): per topic, PT sorted, CG sorted,
  N = ceil(|PT| / |CG|), consumer Ci takes partitions i*N .. (i+1)*N-1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from protocol.errors import UsageError

TP = tuple[str, int]
Subscriptions = Mapping[str, Iterable[str]]
Assignment = dict[str, list[TP]]
Assignor = Callable[[Subscriptions, Mapping[str, int], Mapping[str, list[TP]]], Assignment]


def _empty(subscriptions: Subscriptions) -> Assignment:
    return {m: [] for m in sorted(subscriptions)}


def _consumers_per_topic(
    subscriptions: Subscriptions, partitions_per_topic: Mapping[str, int]
) -> dict[str, list[str]]:
    per_topic: dict[str, list[str]] = {}
    for member in sorted(subscriptions):
        for topic in set(subscriptions[member]):
            if partitions_per_topic.get(topic, 0) > 0:
                per_topic.setdefault(topic, []).append(member)
    return {t: sorted(ms) for t, ms in sorted(per_topic.items())}


def range_assign(
    subscriptions: Subscriptions,
    partitions_per_topic: Mapping[str, int],
    current: Mapping[str, list[TP]] | None = None,
) -> Assignment:
    return _per_topic(subscriptions, partitions_per_topic, _range_span)


def contiguous_assign(
    subscriptions: Subscriptions,
    partitions_per_topic: Mapping[str, int],
    current: Mapping[str, list[TP]] | None = None,
) -> Assignment:
    return _per_topic(subscriptions, partitions_per_topic, _contiguous_span)


def _per_topic(
    subscriptions: Subscriptions,
    partitions_per_topic: Mapping[str, int],
    span: Callable[[int, int, int], range],
) -> Assignment:
    """Per topic, its i-th consumer (sorted) takes the partitions `span(n, consumers, i)`."""
    out = _empty(subscriptions)
    for topic, consumers in _consumers_per_topic(subscriptions, partitions_per_topic).items():
        n = partitions_per_topic[topic]
        for i, member in enumerate(consumers):
            out[member].extend((topic, p) for p in span(n, len(consumers), i))
    return out


def _range_span(n: int, consumers: int, i: int) -> range:
    """n // consumers each, the first n % consumers one extra."""
    per_consumer, extra = divmod(n, consumers)
    start = per_consumer * i + min(i, extra)
    return range(start, start + per_consumer + (1 if i < extra else 0))


def _contiguous_span(n: int, consumers: int, i: int) -> range:
    """ceil(n / consumers) each, the last ones fewer (or none)."""
    per_consumer = -(-n // consumers)  # ceil
    return range(i * per_consumer, min(n, (i + 1) * per_consumer))


def _all_partitions(
    subscriptions: Subscriptions, partitions_per_topic: Mapping[str, int]
) -> list[TP]:
    topics = sorted(
        {t for ts in subscriptions.values() for t in ts if partitions_per_topic.get(t, 0) > 0}
    )
    return [(t, p) for t in topics for p in range(partitions_per_topic[t])]


def roundrobin_assign(
    subscriptions: Subscriptions,
    partitions_per_topic: Mapping[str, int],
    current: Mapping[str, list[TP]] | None = None,
) -> Assignment:
    out = _empty(subscriptions)
    members = sorted(subscriptions)
    if not members:
        return out
    subscribed = {m: set(subscriptions[m]) for m in members}
    at = 0
    for topic, partition in _all_partitions(subscriptions, partitions_per_topic):
        while topic not in subscribed[members[at % len(members)]]:
            at += 1
        out[members[at % len(members)]].append((topic, partition))
        at += 1
    return out


def sticky_assign(
    subscriptions: Subscriptions,
    partitions_per_topic: Mapping[str, int],
    current: Mapping[str, list[TP]] | None = None,
) -> Assignment:
    """Keep valid current partitions, capped at each member's balanced quota, then fill."""
    members = sorted(subscriptions)
    subscribed = {m: set(subscriptions[m]) for m in members}
    partitions = _all_partitions(subscriptions, partitions_per_topic)
    valid = set(partitions)
    kept: dict[str, list[TP]] = {m: [] for m in members}
    claimed: set[TP] = set()
    for m in members:
        for tp in sorted((current or {}).get(m, [])):
            if tp in valid and tp not in claimed and tp[0] in subscribed[m]:
                kept[m].append(tp)
                claimed.add(tp)
    if members and all(subscribed[m] == subscribed[members[0]] for m in members):
        _cap_to_quota(kept, members, len(partitions))
    claimed = {tp for tps in kept.values() for tp in tps}
    for tp in partitions:
        if tp not in claimed:
            eligible = [m for m in members if tp[0] in subscribed[m]]
            if eligible:
                kept[min(eligible, key=lambda m: (len(kept[m]), m))].append(tp)
    _even_out(kept, subscribed, limit=len(partitions))
    return {m: sorted(kept[m]) for m in members}


def _cap_to_quota(kept: dict[str, list[TP]], members: list[str], total: int) -> None:
    """Same subscriptions: the members holding most keep q+1 (r of them), the others q."""
    quota, extra = divmod(total, len(members))
    by_holding = sorted(members, key=lambda m: (-len(kept[m]), m))
    for i, m in enumerate(by_holding):
        cap = quota + (1 if i < extra else 0)
        del kept[m][cap:]


def _even_out(kept: dict[str, list[TP]], subscribed: dict[str, set[str]], limit: int) -> None:
    """Move single partitions from the fullest to the emptiest member that can take one."""
    for _ in range(limit):
        moved = False
        for rich in sorted(kept, key=lambda m: (-len(kept[m]), m)):
            for poor in sorted(kept, key=lambda m: (len(kept[m]), m)):
                if len(kept[rich]) <= len(kept[poor]) + 1:
                    break
                movable = [tp for tp in kept[rich] if tp[0] in subscribed[poor]]
                if movable:
                    kept[rich].remove(movable[-1])
                    kept[poor].append(movable[-1])
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


ASSIGNORS: dict[str, Assignor] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
    "sticky": sticky_assign,
    "contiguous": contiguous_assign,
}
DEFAULT_ASSIGNOR = "range"


def assignor(name: str) -> Assignor:
    found = ASSIGNORS.get(name)
    if found is None:
        raise UsageError(f"unknown assignment strategy {name!r}; one of {sorted(ASSIGNORS)}")
    return found

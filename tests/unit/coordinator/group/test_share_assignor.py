"""The share groups' simple assignor (coordinator/group/share_assignor.py): several members
may share a partition."""

from __future__ import annotations

import uuid

import pytest

from coordinator.group.share_assignor import assign

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"one": (T1, 1), "four": (T2, 4)}


@pytest.mark.parametrize(
    "subscriptions, expected",
    [
        # four members on one partition: all of them share it
        ({m: frozenset({"one"}) for m in "abcd"}, {m: {T1: {0}} for m in "abcd"}),
        # fewer members than partitions: each partition once, spread evenly
        ({"a": frozenset({"four"}), "b": frozenset({"four"})},
         {"a": {T2: {0, 2}}, "b": {T2: {1, 3}}}),
        # more members than partitions: each member one partition, partitions shared
        ({m: frozenset({"four"}) for m in "abcdef"},
         {"a": {T2: {0}}, "b": {T2: {1}}, "c": {T2: {2}}, "d": {T2: {3}}, "e": {T2: {0}},
          "f": {T2: {1}}}),
        # heterogeneous: per topic, over its own subscribers
        ({"a": frozenset({"one", "four"}), "b": frozenset({"four"})},
         {"a": {T1: {0}, T2: {0, 2}}, "b": {T2: {1, 3}}}),
        # an unknown topic assigns nothing; a member subscribed to nothing gets nothing
        ({"a": frozenset({"gone"}), "b": frozenset()}, {"a": {}, "b": {}}),
        ({}, {}),
    ],
)  # fmt: skip
def test_assign(
    subscriptions: dict[str, frozenset[str]], expected: dict[str, dict[uuid.UUID, set[int]]]
) -> None:
    got = assign(subscriptions, TOPICS)
    assert {m: {t: set(ps) for t, ps in a.items()} for m, a in got.items()} == expected


def test_every_partition_of_a_subscribed_topic_has_a_member() -> None:
    for n in range(1, 9):
        got = assign({f"m{i}": frozenset({"four"}) for i in range(n)}, TOPICS)
        covered = set().union(*(a.get(T2, set()) for a in got.values()))
        assert covered == {0, 1, 2, 3}
        sizes = [len(a[T2]) for a in got.values()]
        assert max(sizes) - min(sizes) <= 1

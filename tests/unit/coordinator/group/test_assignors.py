"""Assignors as pure functions, checked against the worked examples of seeds 000 and 004."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.group.assignors import (
    ASSIGNORS,
    TP,
    assignor,
    contiguous_assign,
    range_assign,
    roundrobin_assign,
    sticky_assign,
)
from protocol.errors import UsageError

TWO_TOPICS = {"topic1": 3, "topic2": 3}


def tps(*names: str) -> list[TP]:
    """ "topic1p0" -> ("topic1", 0), in the seed's notation."""
    out = []
    for n in names:
        topic, p = n.rsplit("p", 1)
        out.append((topic, int(p)))
    return sorted(out)


def subs(*members: str, topics: tuple[str, ...] = ("topic1", "topic2")) -> dict[str, list[str]]:
    return {m: list(topics) for m in members}


def test_range_two_consumers_seed004() -> None:
    got = range_assign(subs("consumer1", "consumer2"), TWO_TOPICS)
    assert got == {
        "consumer1": tps("topic1p0", "topic1p1", "topic2p0", "topic2p1"),
        "consumer2": tps("topic1p2", "topic2p2"),
    }


def test_range_three_consumers_seed004_listing() -> None:
    """Seed 004 lists consumer2 with p2 and consumer3 with p1: Range sorts member ids, and the
    listing is exactly its output when consumer3's id sorts before consumer2's."""
    ids = {"consumer1": "a-consumer1", "consumer2": "c-consumer2", "consumer3": "b-consumer3"}
    got = range_assign(subs(*ids.values()), TWO_TOPICS)
    assert got[ids["consumer1"]] == tps("topic1p0", "topic2p0")
    assert got[ids["consumer2"]] == tps("topic1p2", "topic2p2")
    assert got[ids["consumer3"]] == tps("topic1p1", "topic2p1")


def test_range_first_consumers_take_the_extra_partition() -> None:
    got = range_assign(subs("c1", "c2", "c3", topics=("t",)), {"t": 7})
    assert got == {"c1": [("t", 0), ("t", 1), ("t", 2)], "c2": [("t", 3), ("t", 4)],
                   "c3": [("t", 5), ("t", 6)]}  # fmt: skip


def test_roundrobin_two_consumers_as_the_seed004_code_deals() -> None:
    """The seed's RoundRobinAssignor code deals partitions sorted by (topic, partition) over the
    sorted consumers. (The listing printed under it, consumer1 = t1p0 t1p1 t2p2, is not what
    that code gives for any consumer order; both give three partitions each.)"""
    got = roundrobin_assign(subs("consumer1", "consumer2"), TWO_TOPICS)
    assert got == {
        "consumer1": tps("topic1p0", "topic1p2", "topic2p1"),
        "consumer2": tps("topic1p1", "topic2p0", "topic2p2"),
    }


def test_roundrobin_three_consumers_and_skipping_unsubscribed() -> None:
    got = roundrobin_assign(subs("c1", "c2", "c3"), TWO_TOPICS)
    assert got == {"c1": tps("topic1p0", "topic2p0"), "c2": tps("topic1p1", "topic2p1"),
                   "c3": tps("topic1p2", "topic2p2")}  # fmt: skip
    mixed = {"c1": ["topic1"], "c2": ["topic1", "topic2"]}
    got = roundrobin_assign(mixed, TWO_TOPICS)
    assert got["c1"] == tps("topic1p0", "topic1p2")
    assert got["c2"] == tps("topic1p1", "topic2p0", "topic2p1", "topic2p2")


def test_sticky_keeps_assignments_when_a_consumer_leaves() -> None:
    before = sticky_assign(subs("c1", "c2", "c3"), TWO_TOPICS)
    assert sorted(len(v) for v in before.values()) == [2, 2, 2]
    after = sticky_assign(subs("c2", "c3"), TWO_TOPICS, before)
    for m in ("c2", "c3"):
        assert set(before[m]) <= set(after[m])  # nothing the survivors had moved
    assert sorted(len(v) for v in after.values()) == [3, 3]
    # range, by contrast, takes partitions from survivors when c1 of c1..c4 leaves
    four = {"t": 8}
    r_before = range_assign(subs("c1", "c2", "c3", "c4", topics=("t",)), four)
    r_after = range_assign(subs("c2", "c3", "c4", topics=("t",)), four)
    assert not set(r_before["c2"]) <= set(r_after["c2"])
    s_before = sticky_assign(subs("c1", "c2", "c3", "c4", topics=("t",)), four)
    s_after = sticky_assign(subs("c2", "c3", "c4", topics=("t",)), four, s_before)
    assert all(set(s_before[m]) <= set(s_after[m]) for m in ("c2", "c3", "c4"))


def test_sticky_moves_as_few_as_possible_when_one_joins() -> None:
    before = sticky_assign(subs("c1", "c2", topics=("t", "u")), {"t": 6, "u": 4})
    after = sticky_assign(subs("c1", "c2", "c3", topics=("t", "u")), {"t": 6, "u": 4}, before)
    moved = sum(len(set(before[m]) - set(after[m])) for m in before)
    assert sorted(len(v) for v in after.values()) == [3, 3, 4]
    assert moved == 3  # exactly what c3 needs


def test_contiguous_is_seed000_ceil_algorithm() -> None:
    one = {"t": 3}
    walk = [
        (["c1"], {"c1": [0, 1, 2]}),
        (["c1", "c2"], {"c1": [0, 1], "c2": [2]}),
        (["c1", "c2", "c3"], {"c1": [0], "c2": [1], "c3": [2]}),
        (["c1", "c2", "c3", "c4"], {"c1": [0], "c2": [1], "c3": [2], "c4": []}),
        (["c2", "c3", "c4"], {"c2": [0], "c3": [1], "c4": [2]}),
        (["c3", "c4"], {"c3": [0, 1], "c4": [2]}),
        (["c4"], {"c4": [0, 1, 2]}),
    ]
    for members, want in walk:
        got = contiguous_assign(subs(*members, topics=("t",)), one)
        assert got == {m: [("t", p) for p in ps] for m, ps in want.items()}
    # N = ceil(5/4) = 2: C0 0-1, C1 2-3, C2 4, C3 nothing (range would give 2,1,1,1)
    got = contiguous_assign(subs("a", "b", "c", "d", topics=("t",)), {"t": 5})
    assert [len(got[m]) for m in "abcd"] == [2, 2, 1, 0]


def test_missing_topics_and_unknown_names() -> None:
    assert range_assign({"c1": ["nope"]}, {}) == {"c1": []}
    with pytest.raises(UsageError):
        assignor("fastest")


@settings(max_examples=150, deadline=None)
@given(
    members=st.lists(st.sampled_from([f"m{i}" for i in range(8)]), min_size=1, unique=True),
    counts=st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(0, 12), min_size=1),
    picks=st.data(),
)
def test_every_partition_once_and_balance(members, counts, picks) -> None:  # type: ignore[no-untyped-def]
    topics = sorted(counts)
    subscriptions = {m: picks.draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
                     for m in members}  # fmt: skip
    wanted = {(t, p) for s in subscriptions.values() for t in s for p in range(counts[t])}
    for name, fn in ASSIGNORS.items():
        got = fn(subscriptions, counts, {})
        flat = [tp for v in got.values() for tp in v]
        assert sorted(flat) == sorted(wanted), name
        for m, owned in got.items():
            assert all(t in subscriptions[m] for t, _ in owned), name
    same = {m: topics for m in members}
    total = sum(counts.values())
    first = sticky_assign(same, counts, {})
    sizes = [len(v) for v in first.values()]
    assert max(sizes) - min(sizes) <= 1
    if len(members) > 1:
        rest = {m: topics for m in members[1:]}
        second = sticky_assign(rest, counts, first)
        assert sum(len(v) for v in second.values()) == total
        sizes = [len(v) for v in second.values()]
        assert max(sizes) - min(sizes) <= 1
        for m in members[1:]:  # a survivor loses nothing when a member leaves
            assert set(first[m]) <= set(second[m])

"""Replica placement (seed 002): replica j of partition i on b[(i + j) mod n]."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.cluster.placement import assign_replicas
from protocol.errors import InvalidPartitionsError, InvalidReplicationFactorError


def test_seed_example_four_brokers() -> None:
    # Seed 002: partition i on broker i mod n, its replica j on broker (i + j) mod n.
    assert assign_replicas([0, 1, 2, 3], 4, 3) == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 0],
        3: [3, 0, 1],
    }


def test_five_brokers_ten_partitions_rf2() -> None:
    # Seed 004's listing of topic01 (5 brokers, 10 partitions, rf 2) has leaders 1,2,3,4,5,1,...
    # Our leaders match it; its followers come from Kafka's shifted placement, ours follow the
    # seed 002 formula: the next broker in the ring.
    got = assign_replicas([5, 3, 1, 4, 2], 10, 2)
    seed_004_leaders = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
    assert [got[p][0] for p in range(10)] == seed_004_leaders
    assert got[0] == [1, 2]
    assert got[4] == [5, 1]
    assert got[9] == [5, 1]


def test_sparse_broker_ids_are_sorted() -> None:
    assert assign_replicas([7, 3, 11], 3, 2) == {0: [3, 7], 1: [7, 11], 2: [11, 3]}


def test_replication_factor_above_live_brokers_says_so() -> None:
    with pytest.raises(InvalidReplicationFactorError) as info:
        assign_replicas([1, 2], 3, 3)
    assert "replication factor 3 is larger than the 2 live brokers" in str(info.value)


@pytest.mark.parametrize("partitions", [0, -1])
def test_partitions_must_be_positive(partitions: int) -> None:
    with pytest.raises(InvalidPartitionsError):
        assign_replicas([1, 2, 3], partitions, 1)


def test_replication_factor_must_be_positive() -> None:
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas([1, 2, 3], 3, 0)


@given(
    brokers=st.sets(st.integers(0, 1000), min_size=1, max_size=12),
    partitions=st.integers(1, 60),
    data=st.data(),
)
def test_properties(brokers: set[int], partitions: int, data: st.DataObject) -> None:
    rf = data.draw(st.integers(1, len(brokers)))
    got = assign_replicas(brokers, partitions, rf)
    assert sorted(got) == list(range(partitions))
    leaders: dict[int, int] = {}
    for replicas in got.values():
        assert len(replicas) == rf == len(set(replicas))
        assert set(replicas) <= brokers
        leaders[replicas[0]] = leaders.get(replicas[0], 0) + 1
    # Leaders are spread evenly: counts differ by at most one.
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1

"""Pure decisions of the broker: high-watermark advance and fetch byte accounting."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.partition import advance_high_watermark
from broker.partition_read import PartitionRead, fetch_satisfied, read_limit


def test_hw_is_the_smallest_isr_log_end_offset() -> None:
    assert advance_high_watermark(0, 1, [1, 2, 3], {1: 10, 2: 7, 3: 9}) == 7


def test_hw_with_leader_alone_is_its_log_end() -> None:
    assert advance_high_watermark(3, 1, [1], {1: 12}) == 12


def test_hw_never_goes_backwards() -> None:
    assert advance_high_watermark(8, 1, [1, 2], {1: 10, 2: 5}) == 8


def test_hw_waits_for_an_isr_member_with_unknown_offset() -> None:
    assert advance_high_watermark(4, 1, [1, 2], {1: 10}) == 4


def test_hw_ignores_replicas_outside_the_isr() -> None:
    assert advance_high_watermark(0, 1, [1, 3], {1: 10, 2: 1, 3: 10}) == 10


@given(
    current=st.integers(0, 1000),
    leos=st.dictionaries(st.integers(1, 5), st.integers(0, 1000), min_size=1),
)
def test_hw_property(current: int, leos: dict[int, int]) -> None:
    leader = min(leos)
    hw = advance_high_watermark(current, leader, sorted(leos), leos)
    assert hw >= current
    assert hw == max(current, min(leos.values()))


def test_read_limit_takes_the_smaller_of_partition_and_remaining() -> None:
    assert read_limit(1000, 300, 700) == (300, False)
    assert read_limit(100, 300, 0) == (100, True)


def test_read_limit_lets_the_first_partition_exceed_by_one_batch() -> None:
    limit, min_one = read_limit(100, 0, 0)
    assert limit == 0 and min_one


def test_read_limit_never_negative() -> None:
    assert read_limit(100, -50, 150) == (0, False)


def _read(size: int, error: int = 0) -> PartitionRead:
    return PartitionRead("t", 0, error, size_bytes=size)


def test_fetch_satisfied_by_bytes_or_by_an_error() -> None:
    assert not fetch_satisfied([_read(10), _read(20)], 31)
    assert fetch_satisfied([_read(10), _read(21)], 31)
    assert fetch_satisfied([_read(0), _read(0, error=6)], 1)
    assert fetch_satisfied([], 0)

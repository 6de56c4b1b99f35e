"""Kafka's murmur2 test vectors (UtilsTest.testMurmur2) and the partitioner's choices."""

from collections import Counter

import pytest

from client.partitioner import StickyPartitioner, murmur2, partition_for_key, to_positive

KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("data", "expected"), KAFKA_VECTORS.items())
def test_murmur2_matches_kafka(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_murmur2_is_signed_32_bit_for_every_tail_length() -> None:
    for n in range(0, 40):
        h = murmur2(bytes(range(n)))
        assert -(2**31) <= h < 2**31


def test_keyed_partition_is_positive_hash_modulo() -> None:
    # -973932308 & 0x7fffffff = 1173551340; % 6 == 0
    assert to_positive(-973932308) == 1173551340
    assert partition_for_key(b"21", 6) == 1173551340 % 6
    assert partition_for_key(b"abc", 3) == 479470107 % 3


def test_same_key_same_partition() -> None:
    p = StickyPartitioner()
    assert {p.partition("t", b"k1", 8) for _ in range(10)} == {partition_for_key(b"k1", 8)}


def test_keyless_records_stick_until_a_batch_closes_then_spread() -> None:
    p = StickyPartitioner()
    first = p.partition("t", None, 4)
    assert all(p.partition("t", None, 4) == first for _ in range(5))
    seen = Counter()
    for _ in range(400):
        part = p.partition("t", None, 4)
        seen[part] += 1
        p.on_new_batch("t", 4)
    assert set(seen) == {0, 1, 2, 3}
    assert max(seen.values()) - min(seen.values()) <= 1


def test_keyless_prefers_available_partitions() -> None:
    p = StickyPartitioner()
    chosen = set()
    for _ in range(10):
        chosen.add(p.partition("t", None, 4, available=[1, 3]))
        p.on_new_batch("t", 4, available=[1, 3])
    assert chosen == {1, 3}

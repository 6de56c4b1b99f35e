"""KIP-207 through the Kafka door: OFFSET_NOT_AVAILABLE (78) exists from ListOffsets v5; older
versions get LEADER_NOT_AVAILABLE (5), which their clients retry, as Kafka answers them."""

from broker.codecs.kafka.partition_reads import offset_code as _code
from protocol.errors import OffsetNotAvailableError, for_code


def test_versions_before_5_get_leader_not_available() -> None:
    assert [_code(78, v) for v in range(1, 7)] == [5, 5, 5, 5, 78, 78]
    assert _code(0, 1) == 0 and _code(6, 2) == 6
    assert for_code(78) is OffsetNotAvailableError and OffsetNotAvailableError.retriable

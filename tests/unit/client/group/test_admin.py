"""The group admin's reading of a coordinator's answer (client/group/admin.py)."""

from __future__ import annotations

from client.group.admin import _first_code
from protocol.api.group import OffsetCommitResponse, PartitionResult, TopicResult
from protocol.errors import UnknownTopicOrPartitionError


def test_an_error_on_any_partition_is_the_answers_code() -> None:
    """reset_offsets retries a retriable code: UNKNOWN_TOPIC_OR_PARTITION on a partition the
    coordinator's metadata lacks yet (one just added) counts, not only on the first."""
    unknown = UnknownTopicOrPartitionError.code
    resp = OffsetCommitResponse(
        [TopicResult("t", [PartitionResult(0, 0), PartitionResult(1, unknown)])]
    )
    assert _first_code(resp) == unknown
    assert _first_code(OffsetCommitResponse([TopicResult("t", [PartitionResult(0, 0)])])) == 0

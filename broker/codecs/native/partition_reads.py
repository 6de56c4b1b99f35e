"""The native door's codecs of the partition reads besides Fetch (see
broker/codecs/native/__init__.py): ListOffsets and OffsetForLeaderEpoch. A replica names
itself (`replica_id`); a client sends -1. OffsetForLeaderEpoch's `replica_id` decides nothing
(as in Kafka) and is dropped.
"""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import list_offsets
from broker.operations import offset_for_leader_epoch as ofle
from protocol.api import list_offsets as wire
from protocol.api import replication
from protocol.codec import Request

# ----- ListOffsets ----------------------------------------------------------------------------


def _list_offsets_in(request: Request) -> list_offsets.ListOffsets:
    req: wire.ListOffsetsRequest = request.body
    topics = tuple(
        (t.name, tuple(list_offsets.Asked(p.partition, p.timestamp, p.current_leader_epoch)
                       for p in t.partitions))
        for t in req.topics
    )  # fmt: skip
    return list_offsets.ListOffsets(topics, req.replica_id, req.isolation_level)


def _list_offsets_out(
    request: Request, result: list_offsets.ListOffsetsResult
) -> wire.ListOffsetsResponse:
    return wire.ListOffsetsResponse([
        wire.ListOffsetsTopicResponse(name, [
            wire.ListOffsetsPartitionResponse(p.partition, p.error_code, p.timestamp, p.offset,
                                              p.leader_epoch)
            for p in listed
        ])
        for name, listed in result.topics
    ])  # fmt: skip


LIST_OFFSETS = Codec(_list_offsets_in, _list_offsets_out)

# ----- OffsetForLeaderEpoch -------------------------------------------------------------------


def _epochs_in(request: Request) -> ofle.OffsetForLeaderEpoch:
    req: replication.OffsetsForLeaderEpochRequest = request.body
    return ofle.OffsetForLeaderEpoch(tuple(
        (t.name, tuple(ofle.Asked(p.partition, p.current_leader_epoch, p.leader_epoch)
                       for p in t.partitions))
        for t in req.topics
    ))  # fmt: skip


def _epochs_out(
    request: Request, result: ofle.OffsetForLeaderEpochResult
) -> replication.OffsetsForLeaderEpochResponse:
    return replication.OffsetsForLeaderEpochResponse([
        replication.OffsetForLeaderTopicResult(name, [
            replication.EpochEndOffset(p.partition, p.error_code, p.leader_epoch, p.end_offset)
            for p in ends
        ])
        for name, ends in result.topics
    ])  # fmt: skip


OFFSET_FOR_LEADER_EPOCH = Codec(_epochs_in, _epochs_out)

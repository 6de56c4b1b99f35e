"""The native door's codecs of the share groups' offsets APIs (KIP-932;
protocol/api/share_offsets.py): DescribeShareGroupOffsets, AlterShareGroupOffsets and
DeleteShareGroupOffsets, v0 each, over the same operations as the Kafka door's
(broker/codecs/kafka/share_offsets.py). A topic's id travels as a uuid's text ("" unknown).
"""

from __future__ import annotations

import uuid

from broker.codecs import Codec
from broker.operations import (
    alter_share_group_offsets,
    delete_share_group_offsets,
    describe_share_group_offsets,
)
from protocol.api import share_offsets as wire
from protocol.codec import Request


def _id(topic_id: uuid.UUID | None) -> str:
    return "" if topic_id is None else str(topic_id)


def _describe_in(request: Request) -> describe_share_group_offsets.DescribeShareGroupOffsets:
    req: wire.DescribeShareGroupOffsetsRequest = request.body
    return describe_share_group_offsets.DescribeShareGroupOffsets(tuple(
        describe_share_group_offsets.AskedGroup(g.group_id, None if g.topics is None else tuple(
            (t.topic, tuple(t.partitions)) for t in g.topics))
        for g in req.groups
    ))  # fmt: skip


def _describe_out(
    request: Request, result: describe_share_group_offsets.DescribeShareGroupOffsetsResult
) -> wire.DescribeShareGroupOffsetsResponse:
    return wire.DescribeShareGroupOffsetsResponse([
        wire.ShareGroupOffsets(g.group_id, g.error_code, g.error_message, [
            wire.ShareTopicOffsets(t.topic, _id(t.topic_id), [
                wire.SharePartitionOffset(p.partition, p.start_offset, p.leader_epoch, p.lag,
                                          p.error_code, p.error_message)
                for p in t.partitions])
            for t in g.topics])
        for g in result.groups
    ])  # fmt: skip


DESCRIBE_SHARE_GROUP_OFFSETS = Codec(_describe_in, _describe_out)


def _alter_in(request: Request) -> alter_share_group_offsets.AlterShareGroupOffsets:
    req: wire.AlterShareGroupOffsetsRequest = request.body
    return alter_share_group_offsets.AlterShareGroupOffsets(req.group_id, tuple(
        (t.topic, tuple((p.partition, p.start_offset) for p in t.partitions))
        for t in req.topics
    ))  # fmt: skip


def _alter_out(
    request: Request, result: alter_share_group_offsets.AlterShareGroupOffsetsResult
) -> wire.AlterShareGroupOffsetsResponse:
    return wire.AlterShareGroupOffsetsResponse(result.error_code, result.error_message, [
        wire.ShareTopicAltered(t.topic, _id(t.topic_id), [
            wire.SharePartitionError(p.partition, p.error_code, p.error_message)
            for p in t.partitions])
        for t in result.topics
    ])  # fmt: skip


ALTER_SHARE_GROUP_OFFSETS = Codec(_alter_in, _alter_out)


def _delete_in(request: Request) -> delete_share_group_offsets.DeleteShareGroupOffsets:
    req: wire.DeleteShareGroupOffsetsRequest = request.body
    return delete_share_group_offsets.DeleteShareGroupOffsets(req.group_id, tuple(req.topics))


def _delete_out(
    request: Request, result: delete_share_group_offsets.DeleteShareGroupOffsetsResult
) -> wire.DeleteShareGroupOffsetsResponse:
    return wire.DeleteShareGroupOffsetsResponse(result.error_code, result.error_message, [
        wire.ShareTopicDeleted(t.topic, _id(t.topic_id), t.error_code, t.error_message)
        for t in result.topics
    ])  # fmt: skip


DELETE_SHARE_GROUP_OFFSETS = Codec(_delete_in, _delete_out)

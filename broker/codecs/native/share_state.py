"""The native door's codecs of the share coordinator's state APIs (protocol/api/share_state.py;
see broker/codecs/native/__init__.py): a partition leader's persister asks them of another
broker (broker/share/persister.py). Topic ids travel as their 16 bytes."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from broker.codecs import Codec
from broker.operations import (
    delete_share_group_state,
    initialize_share_group_state,
    read_share_group_state,
    read_share_group_state_summary,
    write_share_group_state,
)
from broker.operations.share_state import ShareStateResult
from coordinator.share.records import StateBatch
from protocol.api import share_state as wire
from protocol.codec import Request
from protocol.errors import InvalidRequestError


def _topic_id(raw: bytes) -> uuid.UUID:
    if len(raw) != 16:
        raise InvalidRequestError(f"a topic id is 16 bytes, not {len(raw)}")
    return uuid.UUID(bytes=raw)


def _topics(request: Request, part: Callable[[wire.ShareStatePartition], Any]) -> Any:
    return tuple(
        (_topic_id(t.topic_id), tuple(part(p) for p in t.partitions)) for t in request.body.topics
    )


def _out(request: Request, result: ShareStateResult) -> wire.ShareStateResponse:
    return wire.ShareStateResponse([
        wire.ShareStateTopicResult(b"" if t.topic_id is None else t.topic_id.bytes, [
            wire.ShareStatePartitionResult(
                p.partition, p.error_code, p.error_message, p.state_epoch, p.leader_epoch,
                p.start_offset, p.delivery_complete_count,
                [wire.WireStateBatch(b.first_offset, b.last_offset, b.delivery_state,
                                     b.delivery_count) for b in p.state_batches])
            for p in t.partitions])
        for t in result.topics
    ])  # fmt: skip


def _init_in(request: Request) -> initialize_share_group_state.InitializeShareGroupState:
    m = initialize_share_group_state
    return m.InitializeShareGroupState(
        request.body.group_id,
        _topics(request, lambda p: m.PartitionInit(p.partition, p.state_epoch, p.start_offset)),
    )


def _read_in(request: Request) -> read_share_group_state.ReadShareGroupState:
    m = read_share_group_state
    return m.ReadShareGroupState(
        request.body.group_id,
        _topics(request, lambda p: m.PartitionRead(p.partition, p.leader_epoch)),
    )


def _write_in(request: Request) -> write_share_group_state.WriteShareGroupState:
    m = write_share_group_state
    return m.WriteShareGroupState(request.body.group_id, _topics(request, lambda p: (
        m.PartitionWrite(p.partition, p.state_epoch, p.leader_epoch, p.start_offset, tuple(
            StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in p.state_batches), p.delivery_complete_count))))  # fmt: skip


def _delete_in(request: Request) -> delete_share_group_state.DeleteShareGroupState:
    return delete_share_group_state.DeleteShareGroupState(
        request.body.group_id, _topics(request, lambda p: p.partition)
    )


def _summary_in(request: Request) -> read_share_group_state_summary.ReadShareGroupStateSummary:
    read = read_share_group_state
    return read_share_group_state_summary.ReadShareGroupStateSummary(request.body.group_id,
        _topics(request, lambda p: read.PartitionRead(p.partition, p.leader_epoch)))  # fmt: skip


INITIALIZE_SHARE_GROUP_STATE = Codec(_init_in, _out)
READ_SHARE_GROUP_STATE = Codec(_read_in, _out)
WRITE_SHARE_GROUP_STATE = Codec(_write_in, _out)
DELETE_SHARE_GROUP_STATE = Codec(_delete_in, _out)
READ_SHARE_GROUP_STATE_SUMMARY = Codec(_summary_in, _out)

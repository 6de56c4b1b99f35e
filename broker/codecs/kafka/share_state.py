"""The Kafka door's codecs of the share coordinator's state APIs (KIP-932, broker to broker):
InitializeShareGroupState v0, ReadShareGroupState v0, WriteShareGroupState v0-v1,
DeleteShareGroupState v0 and ReadShareGroupStateSummary v0-v1, Kafka 4.2's versions (v1 adds
KIP-1226's DeliveryCompleteCount). The five answers share one shape (topics by id, then
partitions); `make` keeps the fields each one has.
"""

from __future__ import annotations

import sys
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
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, nested, response_class


def _out(key: int, result_name: str) -> Any:
    def encode(request: KafkaRequest, result: ShareStateResult) -> Any:
        cls = response_class(key, request.header.api_version)
        topic_cls, part_cls = nested(cls, result_name), nested(cls, "PartitionResult")
        batch_cls = getattr(sys.modules[cls.__module__], "StateBatch", None)  # the reads'
        return make(cls, results=tuple(
            make(topic_cls, topic_id=t.topic_id, partitions=tuple(
                make(part_cls, partition=p.partition, error_code=p.error_code,
                     error_message=p.error_message, state_epoch=p.state_epoch,
                     leader_epoch=p.leader_epoch, start_offset=p.start_offset,
                     delivery_complete_count=p.delivery_complete_count,
                     state_batches=tuple(
                         make(batch_cls, first_offset=b.first_offset, last_offset=b.last_offset,
                              delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                         for b in p.state_batches) if batch_cls is not None else ())
                for p in t.partitions))
            for t in result.topics))  # fmt: skip

    return encode


def _init_in(request: KafkaRequest) -> initialize_share_group_state.InitializeShareGroupState:
    m = initialize_share_group_state
    return m.InitializeShareGroupState(request.body.group_id, tuple(
        (t.topic_id, tuple(m.PartitionInit(p.partition, p.state_epoch, p.start_offset)
                           for p in t.partitions))
        for t in request.body.topics))  # fmt: skip


def _read_in(request: KafkaRequest) -> read_share_group_state.ReadShareGroupState:
    m = read_share_group_state
    return m.ReadShareGroupState(request.body.group_id, tuple(
        (t.topic_id, tuple(m.PartitionRead(p.partition, p.leader_epoch) for p in t.partitions))
        for t in request.body.topics))  # fmt: skip


def _write_in(request: KafkaRequest) -> write_share_group_state.WriteShareGroupState:
    m = write_share_group_state
    return m.WriteShareGroupState(request.body.group_id, tuple(
        (t.topic_id, tuple(
            m.PartitionWrite(p.partition, p.state_epoch, p.leader_epoch, p.start_offset, tuple(
                StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                for b in p.state_batches), getattr(p, "delivery_complete_count", -1))
            for p in t.partitions))
        for t in request.body.topics))  # fmt: skip


def _delete_in(request: KafkaRequest) -> delete_share_group_state.DeleteShareGroupState:
    return delete_share_group_state.DeleteShareGroupState(request.body.group_id, tuple(
        (t.topic_id, tuple(p.partition for p in t.partitions)) for t in request.body.topics
    ))  # fmt: skip


def _summary_in(
    request: KafkaRequest,
) -> read_share_group_state_summary.ReadShareGroupStateSummary:
    read = read_share_group_state
    return read_share_group_state_summary.ReadShareGroupStateSummary(request.body.group_id, tuple(
        (t.topic_id, tuple(read.PartitionRead(p.partition, p.leader_epoch) for p in t.partitions))
        for t in request.body.topics))  # fmt: skip


INITIALIZE_SHARE_GROUP_STATE = Codec(
    _init_in, _out(v.INITIALIZE_SHARE_GROUP_STATE, "InitializeStateResult")
)
READ_SHARE_GROUP_STATE = Codec(_read_in, _out(v.READ_SHARE_GROUP_STATE, "ReadStateResult"))
WRITE_SHARE_GROUP_STATE = Codec(_write_in, _out(v.WRITE_SHARE_GROUP_STATE, "WriteStateResult"))
DELETE_SHARE_GROUP_STATE = Codec(_delete_in, _out(v.DELETE_SHARE_GROUP_STATE, "DeleteStateResult"))
READ_SHARE_GROUP_STATE_SUMMARY = Codec(
    _summary_in, _out(v.READ_SHARE_GROUP_STATE_SUMMARY, "ReadStateSummaryResult")
)

"""TxnOffsetCommit (28), v0-v4: the native TxnOffsetCommit (broker/handlers/txn_offset_commit.py)
answered in Kafka's shape: a transactional producer commits a group's offsets inside its
transaction (v3 adds KIP-447's generation, member id and group instance id, v2 the committed
leader epoch); they count as the group's offsets once the COMMIT marker is written, and are
dropped at ABORT."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers import txn_offset_commit as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.txn import (
    TXN_OFFSET_COMMIT,
    TxnOffsetCommitPartition,
    TxnOffsetCommitRequest,
    TxnOffsetCommitTopic,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import TXN_OFFSET_COMMIT as TXN_OFFSET_COMMIT_KEY


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    topics = [
        TxnOffsetCommitTopic(t.name, [
            TxnOffsetCommitPartition(int(p.partition_index), int(p.committed_offset),
                                     p.committed_metadata,
                                     int(getattr(p, "committed_leader_epoch", -1)))
            for p in t.partitions])
        for t in req.topics
    ]  # fmt: skip
    body = TxnOffsetCommitRequest(
        req.transactional_id, req.group_id, req.producer_id, req.producer_epoch, topics,
        getattr(req, "generation_id", -1), getattr(req, "member_id", ""),
        getattr(req, "group_instance_id", None) or None,
    )  # fmt: skip
    resp = await native.handle(ctx, as_native(TXN_OFFSET_COMMIT, body, request), session)
    cls = response_class(TXN_OFFSET_COMMIT_KEY, version)
    topic_cls = nested(cls, "TxnOffsetCommitResponseTopic")
    part_cls = nested(cls, "TxnOffsetCommitResponsePartition")
    return make(cls, throttle_time=0, topics=tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition, error_code=p.error_code)
            for p in t.partitions))
        for t in resp.topics
    ))  # fmt: skip

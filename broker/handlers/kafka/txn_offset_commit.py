"""TxnOffsetCommit (28), v0-v4: a transactional producer commits a group's offsets inside its
transaction (KIP-98; v3 adds KIP-447's generation and member id, checked as OffsetCommit checks
them). Sent to the group's coordinator, which appends them to `__consumer_offsets` as part of
the transaction; they count as the group's offsets once the COMMIT marker is written there, and
are dropped at ABORT."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.kafka._txn import code_of
from protocol.errors import CoordinatorNotAvailableError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import TXN_OFFSET_COMMIT


async def handle(ctx: BrokerContext, request: KafkaRequest) -> Any:
    req = request.body
    version = request.header.api_version
    offsets = [
        (t.name, int(p.partition_index), int(p.committed_offset), p.committed_metadata,
         int(getattr(p, "committed_leader_epoch", -1)))
        for t in req.topics for p in t.partitions
    ]  # fmt: skip
    if ctx.groups is None:
        code = CoordinatorNotAvailableError.code
    else:
        code = await ctx.groups.txn_commit(
            req.group_id, req.producer_id, req.producer_epoch,
            getattr(req, "generation_id", -1), getattr(req, "member_id", ""), offsets,
        )  # fmt: skip
    code = code_of(code, "TxnOffsetCommit", version)
    cls = response_class(TXN_OFFSET_COMMIT, version)
    topic_cls = nested(cls, "TxnOffsetCommitResponseTopic")
    part_cls = nested(cls, "TxnOffsetCommitResponsePartition")
    return make(cls, throttle_time=0, topics=tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition_index, error_code=code)
            for p in t.partitions))
        for t in req.topics
    ))  # fmt: skip

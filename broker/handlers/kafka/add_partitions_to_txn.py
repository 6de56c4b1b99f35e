"""AddPartitionsToTxn (24), v0-v4: a producer names the partitions its open transaction
writes to, before it produces to them (KIP-98); the coordinator records them in
`__transaction_state` so that it knows where to write the markers. v4 batches transactions and
is sent by brokers only, with `verify_only` (KIP-890: a leader asks whether a partition is in
the ongoing transaction before it accepts a transactional batch)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.kafka._txn import code_of, coordinator
from broker.handlers.txn_common import add_partitions_refusals
from broker.session import Session
from protocol.errors import OdradekError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import ADD_PARTITIONS_TO_TXN

API = "AddPartitionsToTxn"


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    cls = response_class(ADD_PARTITIONS_TO_TXN, version)
    if version < 4:
        topics = await _one(ctx, session, version, req.v3_and_below_transactional_id,
                            req.v3_and_below_producer_id, req.v3_and_below_producer_epoch,
                            req.v3_and_below_topics, False, cls)  # fmt: skip
        return make(cls, throttle_time=0, results_by_topic_v3_and_below=topics)
    result_cls = nested(cls, "AddPartitionsToTxnResult")
    results = []
    for txn in req.transactions:
        topics = await _one(ctx, session, version, txn.transactional_id, txn.producer_id,
                            txn.producer_epoch, txn.topics, txn.verify_only, cls)  # fmt: skip
        results.append(make(result_cls, transactional_id=txn.transactional_id,
                            topic_results=topics))  # fmt: skip
    return make(cls, throttle_time=0, error_code=0, results_by_transaction=tuple(results))


async def _one(
    ctx: BrokerContext, session: Session, version: int, tid: str, pid: int, epoch: int,
    topics: Any, verify_only: bool, cls: Any,
) -> tuple[Any, ...]:  # fmt: skip
    """One transaction's per-topic results. v4+ comes from brokers verifying a transaction
    (ClusterAction on the cluster, as Kafka)."""
    wanted = [(t.name, int(p)) for t in topics for p in t.partitions]
    answer: dict[tuple[str, int], str] | dict[tuple[str, int], int] | int
    try:
        answer = add_partitions_refusals(ctx, session, tid, wanted, verify_only or version >= 4)
        if not answer:
            answer = await coordinator(ctx).add_partitions(tid, pid, epoch, wanted, verify_only)
    except OdradekError as exc:
        answer = exc.code
    codes = {tp: code_of(answer if isinstance(answer, int) else answer[tp], API, version)
             for tp in wanted}  # fmt: skip
    topic_cls = nested(cls, "AddPartitionsToTxnTopicResult")
    part_cls = nested(cls, "AddPartitionsToTxnPartitionResult")
    return tuple(
        make(topic_cls, name=t.name, results_by_partition=tuple(
            make(part_cls, partition_index=p, partition_error_code=codes[(t.name, int(p))])
            for p in t.partitions))
        for t in topics
    )  # fmt: skip
